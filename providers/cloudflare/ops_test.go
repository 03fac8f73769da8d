package cloudflare

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/providers/plan"
)

// withIDs gives r the ids id-<value>.
func withIDs(r plan.Record) plan.Record {
	r.IDs = nil
	for _, v := range r.Values {
		r.IDs = append(r.IDs, "id-"+v)
	}
	return r
}

// show is an op as "kind name type content ttl [id]".
func show(o op) string {
	s := fmt.Sprintf("%s %s %s %s %d", o.kind, o.rec.Name, o.rec.Type, o.rec.Content, o.rec.TTL)
	if o.rec.ID != "" {
		s += " " + o.rec.ID
	}
	if o.rec.Proxied {
		s += " proxied"
	}
	return s
}

func TestOps(t *testing.T) {
	owner := rec(plan.OwnerName("app.example.com."), "TXT", 300, "heritage=meridian,owner=m1,types=A")
	a := func(ttl uint32, vals ...string) plan.Record { return rec("app.example.com.", "A", ttl, vals...) }
	upd := func(old, nu plan.Record) plan.Update { return plan.Update{Old: withIDs(old), New: nu} }
	weighted := a(30, "10.0.0.1")
	weighted.SetID, weighted.Weight = "us", ptr(int64(10))

	tests := []struct {
		name   string
		cs     plan.Changes
		want   []string
		failed []string
	}{
		{
			name: "one value replacing another is one in-place update",
			cs:   plan.Changes{Updates: []plan.Update{upd(a(30, "10.0.0.1"), a(30, "10.0.0.2"))}},
			want: []string{"update_record app.example.com A 10.0.0.2 30 id-10.0.0.1"},
		},
		{
			name: "a kept value is not touched when only another one changes",
			cs:   plan.Changes{Updates: []plan.Update{upd(a(30, "10.0.0.1", "10.0.0.2"), a(30, "10.0.0.1", "10.0.0.3"))}},
			want: []string{"update_record app.example.com A 10.0.0.3 30 id-10.0.0.2"},
		},
		{
			name: "a set that shrinks edits one record and deletes the rest last",
			cs:   plan.Changes{Updates: []plan.Update{upd(a(30, "10.0.0.1", "10.0.0.2", "10.0.0.3"), a(30, "10.0.0.9"))}},
			want: []string{
				"update_record app.example.com A 10.0.0.9 30 id-10.0.0.1",
				"delete_record app.example.com A 10.0.0.2 30 id-10.0.0.2",
				"delete_record app.example.com A 10.0.0.3 30 id-10.0.0.3",
			},
		},
		{
			name: "a set that grows edits one record and creates the rest",
			cs:   plan.Changes{Updates: []plan.Update{upd(a(30, "10.0.0.1"), a(30, "10.0.0.8", "10.0.0.9"))}},
			want: []string{
				"update_record app.example.com A 10.0.0.8 30 id-10.0.0.1",
				"create_record app.example.com A 10.0.0.9 30",
			},
		},
		{
			name: "a TTL change edits every record in place",
			cs:   plan.Changes{Updates: []plan.Update{upd(a(30, "10.0.0.1", "10.0.0.2"), a(60, "10.0.0.1", "10.0.0.2"))}},
			want: []string{
				"update_record app.example.com A 10.0.0.1 60 id-10.0.0.1",
				"update_record app.example.com A 10.0.0.2 60 id-10.0.0.2",
			},
		},
		{
			name: "turning proxying on edits every record in place",
			cs: plan.Changes{Updates: []plan.Update{upd(a(1, "10.0.0.1"), func() plan.Record {
				r := a(1, "10.0.0.1")
				r.Proxied = ptr(true)
				return r
			}())}},
			want: []string{"update_record app.example.com A 10.0.0.1 1 id-10.0.0.1 proxied"},
		},
		{
			name: "a new set is one create per value, after its ownership record",
			cs:   plan.Changes{Creates: []plan.Record{a(30, "10.0.0.1", "10.0.0.2"), owner}},
			want: []string{
				`create_record _meridian-owner.app.example.com TXT "heritage=meridian,owner=m1,types=A" 300`,
				"create_record app.example.com A 10.0.0.1 30",
				"create_record app.example.com A 10.0.0.2 30",
			},
		},
		{
			name: "a removed set is deleted before its ownership record",
			cs:   plan.Changes{Deletes: []plan.Record{withIDs(owner), withIDs(a(30, "10.0.0.1"))}},
			want: []string{
				"delete_record app.example.com A 10.0.0.1 30 id-10.0.0.1",
				`delete_record _meridian-owner.app.example.com TXT "heritage=meridian,owner=m1,types=A" 300 id-heritage=meridian,owner=m1,types=A`,
			},
		},
		{
			name: "updates and creates of every name go before deletes",
			cs: plan.Changes{
				Creates: []plan.Record{rec("b.example.com.", "A", 30, "10.0.0.2")},
				Updates: []plan.Update{upd(rec("c.example.com.", "A", 30, "10.0.0.3", "10.0.0.4"), rec("c.example.com.", "A", 30, "10.0.0.5"))},
				Deletes: []plan.Record{withIDs(rec("a.example.com.", "A", 30, "10.0.0.1"))},
			},
			want: []string{
				"update_record c.example.com A 10.0.0.5 30 id-10.0.0.3",
				"create_record b.example.com A 10.0.0.2 30",
				"delete_record c.example.com A 10.0.0.4 30 id-10.0.0.4",
				"delete_record a.example.com A 10.0.0.1 30 id-10.0.0.1",
			},
		},
		{
			name: "a name turning from A into CNAME loses its A records right before the CNAME is created",
			cs: plan.Changes{
				Creates: []plan.Record{rec("b.example.com.", "A", 30, "10.0.0.2"), rec("app.example.com.", "CNAME", 30, "app.cdn.net.")},
				Deletes: []plan.Record{withIDs(a(30, "10.0.0.1"))},
			},
			want: []string{
				"delete_record app.example.com A 10.0.0.1 30 id-10.0.0.1",
				"create_record b.example.com A 10.0.0.2 30",
				"create_record app.example.com CNAME app.cdn.net 30",
			},
		},
		{
			name:   "a Route53 routing policy is refused without a request",
			cs:     plan.Changes{Creates: []plan.Record{weighted}},
			failed: []string{"app.example.com. A [us] create"},
		},
		{
			name:   "an update without record ids is refused without a request",
			cs:     plan.Changes{Updates: []plan.Update{{Old: a(30, "10.0.0.1"), New: a(30, "10.0.0.2")}}},
			failed: []string{"app.example.com. A update"},
		},
		{
			name: "a TXT value is written quoted and a zero TTL as automatic",
			cs:   plan.Changes{Creates: []plan.Record{rec("t.example.com.", "TXT", 0, `say "hi"`)}},
			want: []string{`create_record t.example.com TXT "say \"hi\"" 1`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changes, got := ops(tt.cs)
			require.Len(t, changes, tt.cs.Len())
			var shown, failed []string
			for _, o := range got {
				shown = append(shown, show(o))
			}
			for _, c := range changes {
				if c.err != nil {
					failed = append(failed, c.key.String()+" "+c.op)
				}
			}
			assert.Equal(t, tt.want, shown)
			assert.Equal(t, tt.failed, failed)
		})
	}
}

func TestTXTQuoting(t *testing.T) {
	long := ""
	for range 600 {
		long += "x"
	}
	for _, v := range []string{"heritage=meridian,owner=m1,types=A", `quote " and \ backslash`, long, ""} {
		q := quoteTXT(v)
		assert.Equal(t, v, unquoteTXT(q), "round trip of %q via %s", v, q)
	}
	assert.Equal(t, `"`+long[:255]+`" "`+long[:255]+`" "`+long[:90]+`"`, quoteTXT(long))
	assert.Equal(t, "bare text", unquoteTXT("bare text"), "bare content is kept as it is")
	assert.Equal(t, `"unterminated`, unquoteTXT(`"unterminated`))
}

func TestGroup(t *testing.T) {
	got := group([]DNSRecord{
		{ID: "2", Name: "App.Example.com", Type: "A", Content: "10.0.0.2", TTL: 30},
		{ID: "1", Name: "app.example.com", Type: "A", Content: "10.0.0.1", TTL: 30},
		{ID: "3", Name: "mixed.example.com", Type: "A", Content: "10.0.0.3", TTL: 30},
		{ID: "4", Name: "mixed.example.com", Type: "A", Content: "10.0.0.4", TTL: 60},
		{ID: "5", Name: "p.example.com", Type: "AAAA", Content: "2001:DB8:0::1", TTL: 1, Proxied: true},
		{ID: "6", Name: "docs.example.com", Type: "CNAME", Content: "Docs.CDN.net", TTL: 60},
		{ID: "7", Name: "_meridian-owner.app.example.com", Type: "TXT", Content: `"heritage=meridian,owner=m1,types=A"`, TTL: 300},
	})
	want := []plan.Record{
		{Name: "_meridian-owner.app.example.com.", Type: "TXT", TTL: 300, Values: []string{"heritage=meridian,owner=m1,types=A"}, IDs: []string{"7"}},
		{Name: "app.example.com.", Type: "A", TTL: 30, Values: []string{"10.0.0.1", "10.0.0.2"}, IDs: []string{"1", "2"}},
		{Name: "docs.example.com.", Type: "CNAME", TTL: 60, Values: []string{"docs.cdn.net."}, IDs: []string{"6"}},
		{Name: "mixed.example.com.", Type: "A", TTL: 0, Values: []string{"10.0.0.3", "10.0.0.4"}, IDs: []string{"3", "4"}},
		{Name: "p.example.com.", Type: "AAAA", TTL: 1, Values: []string{"2001:db8::1"}, IDs: []string{"5"}, Proxied: ptr(true)},
	}
	assert.Equal(t, want, got)
}
