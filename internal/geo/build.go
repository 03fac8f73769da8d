package geo

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
)

// DatabaseType is the database_type that BuildMMDB writes into the metadata.
const DatabaseType = "Meridian-Country"

// row is one network of the CSV input.
type row struct {
	line      int
	prefix    netip.Prefix // normalized
	country   string
	continent string
	region    string // "" = none
}

// BuildMMDB reads CSV lines "cidr,country,continent[,region]" from in and
// writes a MaxMind DB file with one GeoLite2-Country style record per line to
// out:
//
//	{"country": {"iso_code": "DE"}, "continent": {"code": "EU"}, "meridian": {"region": "eu-west"}}
//
// (meridian only when a region is given). A first line starting with
// "network" or "cidr" is a header and skipped, as are blank lines and lines
// starting with #. Networks may nest: the most specific one wins, whatever
// the order of the lines. Reserved and private networks are allowed.
//
// It returns the number of networks written. Errors name the line, the
// column and the allowed values; nothing useful is written to out then.
func BuildMMDB(in io.Reader, out io.Writer) (records int, err error) {
	rows, err := readRows(in)
	if err != nil {
		return 0, err
	}
	if len(rows) == 0 {
		return 0, errors.New("no networks in the input")
	}
	tree, err := mmdbwriter.New(mmdbwriter.Options{
		DatabaseType: DatabaseType,
		Description:  map[string]string{"en": "Meridian client networks"},
		// Tests and private deployments place 10.0.0.0/8, 192.0.2.0/24 or
		// 2001:db8::/32; the writer refuses them by default.
		IncludeReservedNetworks: true,
		RecordSize:              recordSize(rows),
		// IPv4 aliasing stays on, as in GeoLite2: ::ffff:0:0/96,
		// 2001::/32 (Teredo) and 2002::/16 (6to4) lead to the IPv4 tree.
	})
	if err != nil {
		return 0, fmt.Errorf("mmdb writer: %w", err)
	}
	// The writer replaces what a later insert covers, so insert the widest
	// networks first: then the most specific one wins.
	slices.SortStableFunc(rows, func(a, b row) int { return cmp.Compare(treeBits(a.prefix), treeBits(b.prefix)) })
	for _, r := range rows {
		if err := insertRow(tree, r); err != nil {
			return 0, err
		}
	}
	if _, err := tree.WriteTo(out); err != nil {
		return 0, fmt.Errorf("write mmdb: %w", err)
	}
	return len(rows), nil
}

// readRows reads and checks every line of the CSV input.
func readRows(in io.Reader) ([]row, error) {
	br := bufio.NewReader(in)
	if bom, _ := br.Peek(3); bytes.Equal(bom, []byte("\xef\xbb\xbf")) {
		_, _ = br.Discard(3) // a UTF-8 byte order mark, as spreadsheets write
	}
	cr := csv.NewReader(br)
	cr.Comment = '#'
	cr.FieldsPerRecord = -1 // 3 or 4, checked below
	cr.TrimLeadingSpace = true

	var rows []row
	seen := map[netip.Prefix]int{} // network -> line
	first := true
	for {
		fields, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return nil, fmt.Errorf("csv: %w", err) // a *csv.ParseError names the line
		}
		line, _ := cr.FieldPos(0)
		for i := range fields {
			fields[i] = strings.TrimSpace(fields[i])
		}
		if strings.Join(fields, "") == "" {
			continue // a line of blanks
		}
		if first {
			first = false
			h := strings.ToLower(fields[0])
			if strings.HasPrefix(h, "network") || strings.HasPrefix(h, "cidr") {
				continue
			}
		}
		r, err := parseRow(line, fields)
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[r.prefix]; dup {
			return nil, fmt.Errorf("line %d: cidr %s is already on line %d", line, r.prefix, prev)
		}
		seen[r.prefix] = line
		rows = append(rows, r)
	}
}

// v4Compatible is the block where an IPv6 MaxMind DB keeps the IPv4 tree.
var v4Compatible = netip.MustParsePrefix("::/96")

func parseRow(line int, f []string) (row, error) {
	if len(f) != 3 && len(f) != 4 {
		return row{}, fmt.Errorf("line %d: %d columns (allowed: 3 or 4, cidr,country,continent[,region])", line, len(f))
	}
	p, err := netip.ParsePrefix(f[0])
	if err != nil {
		return row{}, fmt.Errorf("line %d: cidr %q is not allowed (allowed: an IPv4 or IPv6 network such as 192.0.2.0/24 or 2001:db8::/32): %w", line, f[0], err)
	}
	if m := p.Masked(); m != p {
		return row{}, fmt.Errorf("line %d: cidr %q has host bits set (allowed: the network address, here %s)", line, f[0], m)
	}
	p, _ = normalize(p)
	if p.Addr().Is6() && p.Bits() >= 96 && v4Compatible.Contains(p.Addr()) {
		return row{}, fmt.Errorf("line %d: cidr %q is inside ::/96, where a MaxMind DB keeps IPv4 (allowed: the IPv4 network instead)", line, f[0])
	}
	if err := checkCountry(f[1]); err != nil {
		return row{}, fmt.Errorf("line %d: %w", line, err)
	}
	if err := checkContinent(f[2]); err != nil {
		return row{}, fmt.Errorf("line %d: %w", line, err)
	}
	r := row{line: line, prefix: p, country: f[1], continent: f[2]}
	if len(f) == 4 {
		r.region = f[3]
	}
	return r, nil
}

// insertRow writes r into the tree. An IPv6 network that holds ::/96 (such
// as ::/0) is inserted as the pieces around ::/96, so that it does not
// answer for IPv4: the two families stay apart, as with custom networks.
func insertRow(tree *mmdbwriter.Tree, r row) error {
	value := r.value()
	pieces := []netip.Prefix{r.prefix}
	if r.prefix.Addr().Is6() && r.prefix.Contains(v4Compatible.Addr()) {
		pieces = around(r.prefix, v4Compatible)
	}
	for _, p := range pieces {
		ipnet := &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
		if err := tree.Insert(ipnet, value); err != nil {
			var alias *mmdbwriter.AliasedNetworkError
			if errors.As(err, &alias) {
				return fmt.Errorf("line %d: cidr %s is inside %s, which a MaxMind DB aliases to IPv4 (allowed: the IPv4 network instead)", r.line, r.prefix, alias.AliasedNetwork)
			}
			return fmt.Errorf("line %d: cidr %s: %w", r.line, r.prefix, err)
		}
	}
	return nil
}

// around returns the networks that together cover outer except inner, which
// must lie inside outer: the sibling of each step on the path down to inner.
func around(outer, inner netip.Prefix) []netip.Prefix {
	key := keyOf(inner.Addr())
	var out []netip.Prefix
	for bits := outer.Bits(); bits < inner.Bits(); bits++ {
		sib := key
		sib[bits>>3] ^= 0x80 >> (bits & 7) // flip the bit after the shared path
		p, _ := netip.AddrFrom16(sib).Prefix(bits + 1)
		out = append(out, p)
	}
	return out
}

func (r row) value() mmdbtype.Map {
	m := mmdbtype.Map{
		"country":   mmdbtype.Map{"iso_code": mmdbtype.String(r.country)},
		"continent": mmdbtype.Map{"code": mmdbtype.String(r.continent)},
	}
	if r.region != "" {
		m["meridian"] = mmdbtype.Map{"region": mmdbtype.String(r.region)}
	}
	return m
}

// treeBits is the depth of p in an IPv6 search tree, where IPv4 lives at ::/96.
func treeBits(p netip.Prefix) int {
	if p.Addr().Is4() {
		return 96 + p.Bits()
	}
	return p.Bits()
}

// recordSize picks 24-bit records, the smallest file, when they can address
// every node and record for sure, else 28 bits. A record holds a node number
// or nodes+16+data offset, which must stay below 1<<size.
func recordSize(rows []row) int {
	nodes, data := 512, 0 // the IPv4 and alias paths take about 250 nodes
	for _, r := range rows {
		nodes += treeBits(r.prefix) // an insert adds at most one node per bit
		data += 128 + len(r.region) // a record is about 70 bytes plus its region
	}
	if nodes+16+data < 1<<24 {
		return 24
	}
	return 28
}
