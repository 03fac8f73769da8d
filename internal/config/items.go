package config

import (
	"bytes"
	"encoding"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/meridian-gslb/meridian/internal/model"
)

// decodeItems is the decode of a batch of services items (a batch of
// cutServices) without yaml/v3: a purpose-built parser for the common
// subset of YAML that config files use, which fills the model.Service
// values as it reads, with no token queue and no node tree. It reports
// false for anything outside that subset, and decodeBatch then decodes
// the batch with yaml/v3 as before; so it must never accept a batch
// yaml/v3 (with plain) refuses or reads differently
// (TestItemDecoderAgreesWithYAML, FuzzItemDecode).
//
// The subset: lines indented with spaces, only printable ASCII; blank and
// comment lines; block sequences ("- ", also at the indentation of their
// key) and block mappings whose keys are field names; values on one line:
// flow mappings and sequences, single- or double-quoted strings without
// escapes, and plain scalars of a few shapes whose YAML type is plain to
// see — a word (a string unless it is true or false), a decimal integer,
// a decimal fraction, an IPv4 or IPv6 address or prefix. Everything else
// (null values, anchors, aliases, tags, block scalars, multi-line
// scalars or flow nodes, escapes, numbers in other notations, YAML 1.1
// bools, timestamps, unknown or repeated keys, tabs, non-ASCII text) is
// refused. The value a scalar gets is the one yaml/v3's Node.Decode
// gives: the text itself for a string field, the number or bool for the
// others, UnmarshalText of the text for an encoding.TextUnmarshaler.
func decodeItems(data []byte, want int) ([]model.Service, bool) {
	p := itemParser{data: data}
	if want <= 0 || !p.split() || len(p.lines) == 0 {
		return nil, false
	}
	ind := p.lines[0].indent
	if p.countItems(ind) != want {
		return nil, false
	}
	out := make([]model.Service, want)
	for k := range out {
		if !p.item(reflect.ValueOf(&out[k]).Elem(), serviceInfo, ind) {
			return nil, false
		}
	}
	if p.i != len(p.lines) {
		return nil, false
	}
	return out, true
}

// itemParser reads one batch.
type itemParser struct {
	data   []byte
	lines  []itemLine // the lines that are not blank or a comment
	i      int        // the next line to read
	intern map[string]string
}

// itemLine is one line: data[start:end] is its text after the
// indentation.
type itemLine struct {
	start, end, indent int
}

// split finds the lines; false for a byte outside printable ASCII and
// newline (a tab, a carriage return, a control character, UTF-8).
func (p *itemParser) split() bool {
	d := p.data
	p.lines = make([]itemLine, 0, len(d)/24)
	for off := 0; off < len(d); {
		ind := off
		for ind < len(d) && d[ind] == ' ' {
			ind++
		}
		end := ind
		for end < len(d) && d[end] != '\n' {
			if c := d[end]; c < 0x20 || c > 0x7e {
				return false
			}
			end++
		}
		if end > ind && d[ind] != '#' {
			p.lines = append(p.lines, itemLine{start: ind, end: end, indent: ind - off})
		}
		off = end + 1
	}
	return true
}

func (p *itemParser) text(l itemLine) []byte { return p.data[l.start:l.end] }

// countItems counts the items of the block sequence at indentation ind
// that starts at the current line.
func (p *itemParser) countItems(ind int) int {
	n := 0
	for _, l := range p.lines[p.i:] {
		if l.indent < ind {
			break
		}
		if l.indent == ind {
			if !itemOpen(p.text(l)) {
				break
			}
			n++
		}
	}
	return n
}

// str returns the string of b, one copy per distinct value in a batch
// (cluster names, strategies and the like repeat).
func (p *itemParser) str(b []byte) string {
	if s, ok := p.intern[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(b) <= 32 {
		if p.intern == nil {
			p.intern = make(map[string]string, 64)
		}
		if len(p.intern) < 1024 {
			p.intern[s] = s
		}
	}
	return s
}

// item decodes the sequence item at the current line (indentation ind)
// into v.
func (p *itemParser) item(v reflect.Value, ti *typeInfo, ind int) bool {
	if p.i >= len(p.lines) {
		return false
	}
	l := p.lines[p.i]
	t := p.text(l)
	if l.indent != ind || !itemOpen(t) {
		return false
	}
	if len(t) == 1 { // "-" alone: the item is the block below
		p.i++
		if p.i >= len(p.lines) || p.lines[p.i].indent <= ind {
			return false // an empty (null) item
		}
		return p.blockNode(v, ti)
	}
	c := 1
	for c < len(t) && t[c] == ' ' {
		c++
	}
	content := t[c:]
	if len(content) == 0 || itemOpen(content) {
		return false // trailing spaces only, or a compact nested sequence
	}
	if _, _, ok := splitKey(content); ok {
		// A mapping that starts on the item's line: read that line as
		// the mapping's first line, at the content's column.
		p.lines[p.i] = itemLine{start: l.start + c, end: l.end, indent: l.indent + c}
		return p.blockMap(v, ti, l.indent+c)
	}
	p.i++
	if !p.inline(v, ti, content) {
		return false
	}
	return p.i >= len(p.lines) || p.lines[p.i].indent <= ind
}

// blockNode decodes the block node that starts at the current line.
func (p *itemParser) blockNode(v reflect.Value, ti *typeInfo) bool {
	l := p.lines[p.i]
	if itemOpen(p.text(l)) {
		return p.blockSeq(v, ti, l.indent)
	}
	return p.blockMap(v, ti, l.indent)
}

// blockSeq decodes the block sequence at indentation ind.
func (p *itemParser) blockSeq(v reflect.Value, ti *typeInfo, ind int) bool {
	v, ti = alloc(v, ti)
	if ti.kind != kindSlice {
		return false
	}
	n := p.countItems(ind)
	s := reflect.MakeSlice(ti.t, n, n)
	for k := range n {
		if !p.item(s.Index(k), ti.elem, ind) {
			return false
		}
	}
	v.Set(s)
	return true
}

// blockMap decodes the block mapping at indentation ind.
func (p *itemParser) blockMap(v reflect.Value, ti *typeInfo, ind int) bool {
	v, ti = alloc(v, ti)
	if ti.kind != kindStruct {
		return false
	}
	var seen uint64
	for p.i < len(p.lines) {
		l := p.lines[p.i]
		if l.indent < ind {
			break
		}
		if l.indent > ind {
			return false
		}
		key, rest, ok := splitKey(p.text(l))
		if !ok {
			return false
		}
		f, ok := ti.fields[string(key)]
		if !ok || seen&(1<<f.bit) != 0 {
			return false // an unknown or a repeated key
		}
		seen |= 1 << f.bit
		fv := v.Field(f.index)
		p.i++
		if len(rest) == 0 || rest[0] == '#' { // the value is the block below
			if p.i >= len(p.lines) {
				return false
			}
			next := p.lines[p.i]
			switch {
			case next.indent > ind:
				if !p.blockNode(fv, f.ti) {
					return false
				}
			case next.indent == ind && itemOpen(p.text(next)):
				if !p.blockSeq(fv, f.ti, ind) {
					return false
				}
			default:
				return false // a null value
			}
			continue
		}
		if !p.inline(fv, f.ti, rest) {
			return false
		}
	}
	return true
}

// splitKey splits "key: rest" or "key:" into the key (a name of letters,
// digits and underscores) and the rest without its leading spaces.
func splitKey(t []byte) (key, rest []byte, ok bool) {
	i := 0
	for i < len(t) && (isLetter(t[i]) || t[i] == '_' || (i > 0 && isDigit(t[i]))) {
		i++
	}
	if i == 0 || i >= len(t) || t[i] != ':' {
		return nil, nil, false
	}
	if i+1 < len(t) && t[i+1] != ' ' {
		return nil, nil, false
	}
	j := i + 1
	for j < len(t) && t[j] == ' ' {
		j++
	}
	return t[:i], t[j:], true
}

// inline decodes a value written on the rest of a line (t, from its
// first character to the end of the line).
func (p *itemParser) inline(v reflect.Value, ti *typeInfo, t []byte) bool {
	var end int
	var ok bool
	switch t[0] {
	case '{', '[', '"', '\'':
		end, ok = p.flowValue(v, ti, t, 0)
		if !ok {
			return false
		}
	default:
		// A plain scalar: up to a comment or the end of the line.
		end = len(t)
		for i := 1; i < len(t); i++ {
			if t[i] == '#' && t[i-1] == ' ' {
				end = i
				break
			}
		}
		s := trimRight(t[:end])
		if !plainBlock(s) {
			return false
		}
		return p.scalar(v, ti, s, false)
	}
	return restIsComment(t[end:])
}

// restIsComment reports whether t (after a value) holds nothing but
// spaces and perhaps a comment after one.
func restIsComment(t []byte) bool {
	i := 0
	for i < len(t) && t[i] == ' ' {
		i++
	}
	return i == len(t) || (i > 0 && t[i] == '#')
}

// flowValue decodes the flow node at t[i:] (spaces before it skipped)
// and returns the offset after it.
func (p *itemParser) flowValue(v reflect.Value, ti *typeInfo, t []byte, i int) (int, bool) {
	i = skipSpaces(t, i)
	if i >= len(t) {
		return 0, false
	}
	switch t[i] {
	case '{':
		return p.flowMap(v, ti, t, i)
	case '[':
		return p.flowSeq(v, ti, t, i)
	case '"', '\'':
		q := t[i]
		j := i + 1
		for j < len(t) && t[j] != q {
			if t[j] == '\\' {
				return 0, false // an escape
			}
			j++
		}
		if j >= len(t) || (j+1 < len(t) && t[j+1] == q) {
			return 0, false // not closed on the line, or a '' escape
		}
		if !p.scalar(v, ti, t[i+1:j], true) {
			return 0, false
		}
		return j + 1, true
	}
	j := i
	for j < len(t) && t[j] != ',' && t[j] != ']' && t[j] != '}' {
		j++
	}
	s := trimRight(t[i:j])
	if !plainFlow(s) {
		return 0, false
	}
	return j, p.scalar(v, ti, s, false)
}

// flowMap decodes the flow mapping at t[i] ('{').
func (p *itemParser) flowMap(v reflect.Value, ti *typeInfo, t []byte, i int) (int, bool) {
	v, ti = alloc(v, ti)
	if ti.kind != kindStruct {
		return 0, false
	}
	i = skipSpaces(t, i+1)
	if i < len(t) && t[i] == '}' {
		return i + 1, true
	}
	var seen uint64
	for {
		k := i
		for i < len(t) && (isLetter(t[i]) || t[i] == '_' || (i > k && isDigit(t[i]))) {
			i++
		}
		if i == k || i+1 >= len(t) || t[i] != ':' || t[i+1] != ' ' {
			return 0, false
		}
		f, ok := ti.fields[string(t[k:i])]
		if !ok || seen&(1<<f.bit) != 0 {
			return 0, false
		}
		seen |= 1 << f.bit
		if i, ok = p.flowValue(v.Field(f.index), f.ti, t, i+2); !ok {
			return 0, false
		}
		i = skipSpaces(t, i)
		if i >= len(t) {
			return 0, false
		}
		switch t[i] {
		case '}':
			return i + 1, true
		case ',':
			i = skipSpaces(t, i+1)
		default:
			return 0, false
		}
	}
}

// flowSeq decodes the flow sequence at t[i] ('[').
func (p *itemParser) flowSeq(v reflect.Value, ti *typeInfo, t []byte, i int) (int, bool) {
	v, ti = alloc(v, ti)
	if ti.kind != kindSlice {
		return 0, false
	}
	n, empty, ok := flowItems(t, i)
	if !ok {
		return 0, false
	}
	s := reflect.MakeSlice(ti.t, n, n)
	i++
	if empty {
		i = skipSpaces(t, i)
	}
	for k := range n {
		var ok bool
		if i, ok = p.flowValue(s.Index(k), ti.elem, t, i); !ok {
			return 0, false
		}
		i = skipSpaces(t, i)
		if i >= len(t) {
			return 0, false
		}
		if k < n-1 {
			if t[i] != ',' {
				return 0, false
			}
			i++
		}
	}
	if i >= len(t) || t[i] != ']' {
		return 0, false
	}
	v.Set(s)
	return i + 1, true
}

// flowItems counts the items of the flow sequence at t[i] ('[') from the
// commas at its depth, and reports whether it is empty. It reports false
// when the sequence is not closed on the line or holds a quote (which could
// hold a comma).
func flowItems(t []byte, i int) (n int, empty, ok bool) {
	depth, j := 0, skipSpaces(t, i+1)
	empty = j < len(t) && t[j] == ']'
	for j = i + 1; j < len(t); j++ {
		switch t[j] {
		case '[', '{':
			depth++
		case '}':
			depth--
		case ']':
			depth--
		case ',':
			if depth == 0 {
				n++
			}
		case '"', '\'':
			return 0, false, false // counted wrong if it held a comma; rare in lists
		}
		if depth < 0 {
			break
		}
	}
	if depth >= 0 {
		return 0, false, false // not closed on the line
	}
	if !empty {
		n++
	}
	return n, empty, true
}

// scalar sets v from the scalar s (quoted: written in quotes).
func (p *itemParser) scalar(v reflect.Value, ti *typeInfo, s []byte, quoted bool) bool {
	c := scalarString
	if !quoted {
		if c = classify(s); c == scalarRefused {
			return false
		}
	}
	v, ti = alloc(v, ti)
	switch ti.kind {
	case kindString:
		// A number into a string: the positioned decoder writes the
		// number (0017 → "17", 1.50 → "1.5"), yaml/v3 the text; only an
		// integer written as both write it is taken.
		if c == scalarFloat || c == scalarNumberOrString || (c == scalarInt && !canonicalInt(string(s))) {
			return false
		}
		v.SetString(p.str(s))
		return true
	case kindText:
		return v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText(s) == nil
	case kindInt:
		if c != scalarInt {
			return false
		}
		n, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil || v.OverflowInt(n) {
			return false
		}
		v.SetInt(n)
		return true
	case kindFloat:
		if c != scalarInt && c != scalarFloat {
			return false
		}
		f, err := strconv.ParseFloat(string(s), 64)
		if err != nil {
			return false
		}
		v.SetFloat(f)
		return true
	case kindBool:
		if c != scalarBool {
			return false
		}
		v.SetBool(s[0] == 't')
		return true
	}
	return false
}

// The YAML type of a plain scalar, as yaml/v3 resolves it.
const (
	scalarRefused = iota // not sure, or null, or a YAML 1.1 bool
	scalarString
	scalarInt
	scalarFloat
	scalarBool
	scalarNumberOrString // one of the three, not known which
)

// classify resolves a plain scalar of the shapes decodeItems takes.
func classify(s []byte) int {
	c := s[0]
	switch {
	case isLetter(c) || c == '_' || c == '/':
		if yaml11Bool(string(s)) {
			if string(s) == "true" || string(s) == "false" {
				return scalarBool
			}
			return scalarRefused
		}
		switch string(s) {
		case "null", "Null", "NULL":
			return scalarRefused
		}
		return scalarString
	case c == '-':
		if len(s) > 1 && decimalInt(s[1:]) {
			return scalarInt
		}
	case isDigit(c):
		switch {
		case decimalInt(s):
			return scalarInt
		case decimalFraction(s):
			return scalarFloat
		case address(s):
			return scalarString
		case statusRange(s):
			return scalarString // e.g. 301-302 (not a date: that needs 4 digits before '-')
		case !bytes.ContainsAny(s, "-:"):
			// 2s, 1m30s, 20%, 1e5, 0x1F: a string, an integer or a
			// float, never a date (that needs a '-'): the text itself
			// for a string field or UnmarshalText, refused for others.
			return scalarNumberOrString
		}
	}
	return scalarRefused
}

// decimalInt: 0, or up to 18 digits without a leading zero (yaml/v3
// reads 017 as octal).
func decimalInt(s []byte) bool {
	if len(s) == 0 || len(s) > 18 || (s[0] == '0' && len(s) > 1) {
		return false
	}
	for _, c := range s {
		if !isDigit(c) {
			return false
		}
	}
	return true
}

// statusRange: 1 to 3 digits, '-', 1 to 3 digits.
func statusRange(s []byte) bool {
	a, b, ok := bytes.Cut(s, []byte{'-'})
	return ok && len(a) <= 3 && len(b) <= 3 && decimalInt(a) && len(b) > 0 && allDigits(b)
}

func allDigits(s []byte) bool {
	for _, c := range s {
		if !isDigit(c) {
			return false
		}
	}
	return true
}

// decimalFraction: digits, a point, digits (no exponent).
func decimalFraction(s []byte) bool {
	dot := -1
	for i, c := range s {
		switch {
		case c == '.' && dot < 0:
			dot = i
		case !isDigit(c):
			return false
		}
	}
	return dot > 0 && dot < len(s)-1 && len(s) <= 24
}

// address: an IPv4 address or prefix (digits with two points or more and
// perhaps a slash) or an IPv6 one starting with a digit (hex digits and
// colons, perhaps points and a slash). Neither is an integer, a float or
// a timestamp for yaml/v3 (no '-', no 'e' with a single point).
func address(s []byte) bool {
	dots, colons := 0, 0
	for _, c := range s {
		switch {
		case c == '.':
			dots++
		case c == ':':
			colons++
		case c == '/' || isDigit(c):
		case (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'):
			if colons == 0 && dots < 2 {
				return false
			}
		default:
			return false
		}
	}
	return dots >= 2 || colons > 0
}

// plainBlock reports whether s (a value on the rest of a block line,
// comment and trailing spaces cut) is a plain scalar of the subset.
func plainBlock(s []byte) bool {
	if len(s) == 0 {
		return false
	}
	for i, c := range s {
		switch c {
		case ':':
			if i+1 == len(s) || s[i+1] == ' ' {
				return false // a mapping value indicator
			}
		case '#', ',', '[', ']', '{', '}', '"', '\'', '\\', '&', '*', '!', '|', '>', '@', '`', '?':
			return false
		}
	}
	return true
}

// plainFlow: the same inside a flow node (no colon at all).
func plainFlow(s []byte) bool {
	if len(s) == 0 {
		return false
	}
	for _, c := range s {
		switch c {
		case ':', '#', ',', '[', ']', '{', '}', '"', '\'', '\\', '&', '*', '!', '|', '>', '@', '`', '?':
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

func skipSpaces(t []byte, i int) int {
	for i < len(t) && t[i] == ' ' {
		i++
	}
	return i
}

func trimRight(t []byte) []byte {
	for len(t) > 0 && t[len(t)-1] == ' ' {
		t = t[:len(t)-1]
	}
	return t
}

// alloc follows pointers, allocating them (yaml/v3 does the same for a
// value that is not null; decodeItems refuses nulls).
func alloc(v reflect.Value, ti *typeInfo) (reflect.Value, *typeInfo) {
	for ti.kind == kindPointer {
		n := reflect.New(ti.elem.t)
		v.Set(n)
		v, ti = n.Elem(), ti.elem
	}
	return v, ti
}

// typeInfo is what decodeItems knows of a Go type.
type typeInfo struct {
	t      reflect.Type
	kind   int
	elem   *typeInfo            // pointer, slice
	fields map[string]fieldInfo // struct: by YAML name
}

type fieldInfo struct {
	index int
	bit   uint // for repeated keys
	ti    *typeInfo
}

// The kinds of Go types decodeItems fills; kindOther (maps, interfaces,
// yaml.Unmarshaler, structs with inline fields, ...) refuses every value.
const (
	kindOther = iota
	kindString
	kindInt
	kindFloat
	kindBool
	kindText // encoding.TextUnmarshaler through a pointer
	kindPointer
	kindStruct
	kindSlice
)

var (
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	serviceInfo     = infoOf(reflect.TypeFor[model.Service](), map[reflect.Type]*typeInfo{})
)

// infoOf describes t (seen: the types described so far, for recursive
// types).
func infoOf(t reflect.Type, seen map[reflect.Type]*typeInfo) *typeInfo {
	if ti, ok := seen[t]; ok {
		return ti
	}
	ti := &typeInfo{t: t}
	seen[t] = ti
	pt := reflect.PointerTo(t)
	if _, ok := pt.MethodByName("UnmarshalYAML"); ok && t.Kind() != reflect.Pointer {
		return ti
	}
	switch {
	case t.Kind() == reflect.Pointer:
		ti.kind, ti.elem = kindPointer, infoOf(t.Elem(), seen)
	case pt.Implements(textUnmarshaler):
		ti.kind = kindText
	case t.Kind() == reflect.String:
		ti.kind = kindString
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64 && t != reflect.TypeFor[time.Duration]():
		ti.kind = kindInt
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		ti.kind = kindFloat
	case t.Kind() == reflect.Bool:
		ti.kind = kindBool
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8:
		ti.kind, ti.elem = kindSlice, infoOf(t.Elem(), seen)
	case t.Kind() == reflect.Struct:
		fields := map[string]fieldInfo{}
		for i := range t.NumField() {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if strings.Contains(opts, "inline") || len(fields) >= 64 {
				return ti // kindOther
			}
			if !f.IsExported() || name == "" || name == "-" {
				continue
			}
			fields[name] = fieldInfo{index: i, bit: uint(len(fields)), ti: infoOf(f.Type, seen)}
		}
		ti.kind, ti.fields = kindStruct, fields
	}
	return ti
}
