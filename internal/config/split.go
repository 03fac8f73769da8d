package config

import (
	"bytes"
	"reflect"
	"runtime"
	"sync"

	yaml3 "go.yaml.in/yaml/v3"

	"github.com/meridian-gslb/meridian/internal/model"
)

// The fast path decodes a large services list in batches instead of one
// node tree for the whole file: the file is cut at the lines that open an
// item of the top-level `services:` block sequence, the rest of the file
// (the head, with `services:` left empty) and each batch of items are
// decoded on their own, on every core, and the items are put back in file
// order. A node tree then lives for one batch only, so a 100 000-service
// file no longer holds about 1 GB of nodes at once (BenchmarkLoad).
//
// The cut is made on the text, so it is checked, not assumed: the head
// must still hold `services:` as a top-level key with an empty value on
// the line it was on, every batch must decode to exactly the items it was
// cut at, and each part passes the same trust check (plain) as a whole
// file. Anything else — a quoted string or a flow list across an item
// line, a second `services:` key, an alias, a panic — sends the file to
// the whole-file decode (decodeWhole), which leaves what it does not
// trust to the positioned decoder as before.

// splitMin is the number of services below which a file is decoded
// whole (a variable for the tests).
var splitMin = 2048

// splitBatch is the number of services per batch.
var splitBatch = 1024

// batchPanic, when set (tests), is called in every batch decode.
var batchPanic func()

// servicesCut is a file cut at its services items.
type servicesCut struct {
	head    []byte // the file without the item lines
	keyLine int    // 1-based line of `services:` in head
	batches [][]byte
	counts  []int // items per batch
	items   int
}

var servicesKey = []byte("services:")

// cutServices cuts data at its top-level `services:` block sequence. It
// reports false when the file does not have that plain shape (the file
// is then decoded whole): `services:` alone on a line at column 0,
// followed by blank or comment lines, then items opened by "- " at one
// indentation of 1 or more spaces, up to the next line at column 0 that
// is not blank or a comment.
func cutServices(data []byte) (servicesCut, bool) {
	var c servicesCut
	if bytes.IndexByte(data, '\r') >= 0 {
		return c, false
	}
	start, line := servicesKeyLine(data)
	if start < 0 || start > len(data) {
		return c, false
	}
	c.keyLine = line
	indent, first := firstItem(data, start)
	if first < 0 {
		return c, false
	}
	opens, sectionEnd, ok := itemOpens(data, first, indent)
	if !ok {
		return c, false
	}
	c.items = len(opens)
	for i := 0; i < len(opens); i += splitBatch {
		j := min(i+splitBatch, len(opens))
		to := sectionEnd
		if j < len(opens) {
			to = opens[j]
		}
		c.batches = append(c.batches, data[opens[i]:to])
		c.counts = append(c.counts, j-i)
	}
	c.head = make([]byte, 0, len(data)-(sectionEnd-first)+1)
	c.head = append(c.head, data[:first]...)
	c.head = append(c.head, data[sectionEnd:]...)
	return c, true
}

// servicesKeyLine finds the line `services:` alone at column 0 and returns
// the offset just after it and its 1-based line number (start -1 when there
// is none).
func servicesKeyLine(data []byte) (start, line int) {
	line = 1
	for off := 0; off < len(data); line++ {
		end := lineEnd(data, off)
		if bytes.Equal(bytes.TrimRight(data[off:end], " "), servicesKey) {
			return end + 1, line
		}
		off = end + 1
	}
	return -1, line
}

// firstItem returns the indentation and offset of the first item after the
// services key (at start), skipping blank and comment lines; first is -1
// when the next such line is not an indented item.
func firstItem(data []byte, start int) (indent []byte, first int) {
	for off := start; off < len(data); {
		end := lineEnd(data, off)
		l := data[off:end]
		t := bytes.TrimLeft(l, " ")
		if len(t) == 0 || t[0] == '#' {
			off = end + 1
			continue
		}
		n := len(l) - len(t)
		if n == 0 || !itemOpen(t) {
			return nil, -1
		}
		return l[:n], off
	}
	return nil, -1
}

// itemOpens returns the offset of every item line at indent from first up
// to the end of the section (the next line at column 0 that is not blank or
// a comment), and that end. It reports false when a line sits left of the
// items: the file is then decoded whole.
func itemOpens(data []byte, first int, indent []byte) (opens []int, sectionEnd int, ok bool) {
	sectionEnd = len(data)
	for off := first; off < len(data); {
		end := lineEnd(data, off)
		l := data[off:end]
		if len(l) > 0 && l[0] != ' ' && l[0] != '#' {
			sectionEnd = off
			break
		}
		if t := bytes.TrimLeft(l, " "); len(t) > 0 && t[0] != '#' && len(l)-len(t) < len(indent) {
			return nil, 0, false
		}
		if bytes.HasPrefix(l, indent) && itemOpen(l[len(indent):]) {
			opens = append(opens, off)
		}
		off = end + 1
	}
	return opens, min(sectionEnd, len(data)), true
}

// lineEnd is the offset of the newline ending the line at off (len(data)
// for the last line).
func lineEnd(data []byte, off int) int {
	if i := bytes.IndexByte(data[off:], '\n'); i >= 0 {
		return off + i
	}
	return len(data)
}

// itemOpen reports whether a line (without its indentation) opens a
// block sequence item: "-" alone or followed by a space.
func itemOpen(t []byte) bool {
	return len(t) > 0 && t[0] == '-' && (len(t) == 1 || t[1] == ' ')
}

var servicesType = yamlFields(reflect.TypeFor[File]())["services"]

// decodeCut decodes a file cut by cutServices (false: decode it whole).
func decodeCut(c servicesCut) (*File, bool) {
	head, ok := decodeDoc(c.head)
	if !ok || !emptyServicesKey(head, c.keyLine) || !plain(head, reflect.TypeFor[File]()) {
		return nil, false
	}
	f := new(File)
	if err := head.Decode(f); err != nil {
		return nil, false
	}
	parts := make([][]model.Service, len(c.batches))
	failed := make(chan struct{})
	var once sync.Once
	fail := func() { once.Do(func() { close(failed) }) }
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(c.batches)) {
		wg.Go(func() {
			for i := range next {
				if !decodeBatch(c.batches[i], c.counts[i], &parts[i]) {
					fail()
				}
			}
		})
	}
feed:
	for i := range c.batches {
		select {
		case next <- i:
		case <-failed:
			break feed
		}
	}
	close(next)
	wg.Wait()
	select {
	case <-failed:
		return nil, false
	default:
	}
	f.Services = make([]model.Service, 0, c.items)
	for _, p := range parts {
		f.Services = append(f.Services, p...)
	}
	return f, true
}

// decodeBatch decodes one batch of items into *out (false: not exactly
// want items, not plain, a decode error or a decoder panic).
func decodeBatch(data []byte, want int, out *[]model.Service) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	if batchPanic != nil {
		batchPanic()
	}
	if items, ok := decodeItems(data, want); ok {
		*out = items
		return true
	}
	return decodeBatchNodes(data, want, out)
}

// decodeBatchNodes is decodeBatch with yaml/v3's node tree, for a batch
// decodeItems does not take.
func decodeBatchNodes(data []byte, want int, out *[]model.Service) bool {
	doc, ok := decodeDoc(data)
	if !ok || len(doc.Content) != 1 {
		return false
	}
	seq := doc.Content[0]
	if seq.Kind != yaml3.SequenceNode || len(seq.Content) != want || !plain(seq, servicesType) {
		return false
	}
	return seq.Decode(out) == nil && len(*out) == want
}

// emptyServicesKey reports whether the head's top-level mapping has the
// key services at line, column 1, with an empty (null) value: the line
// cut at was a top-level key, not text inside another value.
func emptyServicesKey(doc *yaml3.Node, line int) bool {
	if doc.Kind != yaml3.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml3.MappingNode {
		return false
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Value == "services" && k.Line == line && k.Column == 1 {
			return v.Kind == yaml3.ScalarNode && v.Tag == "!!null" && v.Value == ""
		}
	}
	return false
}
