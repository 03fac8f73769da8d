package meridian

import (
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coredns/coredns/plugin/transfer"
	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/xfr"
)

const (
	testSerial = 2026112901 // testConfig's
	testKey    = "xfr-key."
	testSecret = "QUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJD"
)

// serveTransfer transfers zone from the transfer server of `meridian
// serve` (xfr.Server) running over the plugin's store: AXFR when serial is
// 0, else IXFR from serial. It returns every record of every message.
func serveTransfer(t *testing.T, m *Meridian, zone string, serial uint32) []dns.RR {
	t.Helper()
	srv := xfr.New(m.pipe.Store(), xfr.Options{})
	t.Cleanup(srv.Close)
	srv.Configure([]xfr.Zone{{Apex: zone, Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		Key: xfr.Key{Name: testKey, Secret: testSecret, Algorithm: xfr.Algorithm}}})
	zd, ok := m.pipe.Store().Load().ZoneData(zone)
	require.True(t, ok)
	srv.Record(zd)

	q := new(dns.Msg)
	if serial == 0 {
		q.SetAxfr(zone)
	} else {
		q.SetIxfr(zone, serial, "ns.", "hostmaster.")
	}
	q.SetTsig(testKey, xfr.Algorithm, 300, time.Now().Unix())
	in, _, err := dns.TsigGenerate(q, testSecret, "", false)
	require.NoError(t, err)

	client, server := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer server.Close()
		ours, err := srv.ServeTCP(server, in, netip.MustParseAddr("127.0.0.1"))
		assert.True(t, ours)
		assert.NoError(t, err)
	}()
	var rrs []dns.RR
	for {
		var l [2]byte
		if _, err := io.ReadFull(client, l[:]); err != nil {
			break
		}
		b := make([]byte, binary.BigEndian.Uint16(l[:]))
		_, err := io.ReadFull(client, b)
		require.NoError(t, err)
		msg := new(dns.Msg)
		require.NoError(t, msg.Unpack(b))
		require.Equal(t, dns.RcodeSuccess, msg.Rcode, "meridian serve's answer:\n%v", msg)
		rrs = append(rrs, msg.Answer...)
	}
	<-done
	return rrs
}

// pluginTransfer is what the plugin hands to CoreDNS's transfer plugin.
func pluginTransfer(t *testing.T, m *Meridian, zone string, serial uint32) []dns.RR {
	t.Helper()
	ch, err := m.Transfer(zone, serial)
	require.NoError(t, err)
	var rrs []dns.RR
	for batch := range ch {
		rrs = append(rrs, batch...)
	}
	return rrs
}

func texts(rrs []dns.RR) []string {
	out := make([]string, len(rrs))
	for i, rr := range rrs {
		out[i] = rr.String()
	}
	return out
}

func TestTheTransfererTransfersWhatMeridianServeTransfers(t *testing.T) {
	m := newPlugin(t)
	cases := []struct {
		name    string
		serial  uint32 // 0: AXFR, else the IXFR client's serial
		soaOnly bool
	}{
		{"an AXFR carries the serial and the records of meridian serve's AXFR", 0, false},
		{"an IXFR from an older serial gets the whole zone, as from meridian serve without that version", testSerial - 1, false},
		{"an IXFR at the current serial gets the SOA alone", testSerial, true},
		{"an IXFR from a newer serial gets the SOA alone", testSerial + 1, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := pluginTransfer(t, m, "gslb.test.", tc.serial)
			want := serveTransfer(t, m, "gslb.test.", tc.serial)
			assert.Equal(t, texts(want), texts(got))
			require.NotEmpty(t, got)
			soa, ok := got[0].(*dns.SOA)
			require.True(t, ok, "the first record is the SOA")
			assert.Equal(t, uint32(testSerial), soa.Serial)
			if tc.soaOnly {
				assert.Len(t, got, 1)
				return
			}
			assert.Equal(t, got[0].String(), got[len(got)-1].String(), "the last record is the SOA again")
			assert.Contains(t, texts(got), "one.gslb.test.\t30\tIN\tA\t192.0.2.1")
		})
	}
}

func TestTheTransfererIsNotAuthoritativeForOtherZones(t *testing.T) {
	m := newPlugin(t)
	cases := []struct {
		name string
		zone string
	}{
		{"a zone of the plugin's zones that the config does not define is not ours", "example.org."},
		{"a zone outside the plugin's zones is not ours", "other.test."},
		{"a name inside our zone that is not its apex is not a zone", "one.gslb.test."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ch, err := m.Transfer(tc.zone, 0)
			assert.Nil(t, ch)
			assert.ErrorIs(t, err, transfer.ErrNotAuthoritative)
		})
	}
	t.Run("the apex in another spelling is ours", func(t *testing.T) {
		assert.NotEmpty(t, pluginTransfer(t, m, "GSLB.test", 0))
	})
	t.Run("a plugin that is not started yet fails instead of passing the zone on", func(t *testing.T) {
		idle := &Meridian{Zones: []string{"gslb.test."}}
		_, err := idle.Transfer("gslb.test.", 0)
		assert.ErrorIs(t, err, errNotStarted)
	})
}

// fakeNotifier records the zones it was asked to notify.
type fakeNotifier struct {
	mu    sync.Mutex
	zones []string
}

func (f *fakeNotifier) Notify(zone string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.zones = append(f.zones, zone)
	return nil
}

func (f *fakeNotifier) sent() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.zones)
}

func TestNotifyGoesThroughTheTransferPluginWhenTheSerialChanges(t *testing.T) {
	n := &fakeNotifier{}
	m := newPlugin(t, func(m *Meridian) { m.notify.to = n })
	require.Eventually(t, func() bool { return slices.Equal(n.sent(), []string{"gslb.test."}) }, 5*time.Second, 10*time.Millisecond,
		"the zone is notified at start")

	steps := []struct {
		name   string
		config string
		sent   []string
	}{
		{"a reload that changes the zone's content gives it the next serial and sends one NOTIFY",
			strings.Replace(testConfig, "192.0.2.53", "192.0.2.54", 1), []string{"gslb.test.", "gslb.test."}},
		{"a reload that changes nothing in the zone sends none",
			strings.Replace(testConfig, "192.0.2.53", "192.0.2.54", 1) + "\n", []string{"gslb.test.", "gslb.test."}},
		{"a reload that the plugin refuses sends none",
			strings.Replace(testConfig, "    soa: {serial: 2026112901, minimum: 20}", "    transfer: {allow: [127.0.0.1], tsig_key_file: /nonexistent}", 1),
			[]string{"gslb.test.", "gslb.test."}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(m.ConfigPath, []byte(st.config), 0o644))
			m.reload()
			require.Eventually(t, func() bool { return slices.Equal(n.sent(), st.sent) }, 5*time.Second, 10*time.Millisecond)
			time.Sleep(100 * time.Millisecond) // nothing more follows
			assert.Equal(t, st.sent, n.sent())
		})
	}
	serial, ok := soaSerial(m.pipe.Store().Load(), "gslb.test.")
	require.True(t, ok)
	assert.Equal(t, uint32(2026112902), serial, "one content change: the configured serial plus one, as a serve node with zones[].transfer gives")
}

func TestWithoutTheTransferPluginNothingIsNotified(t *testing.T) {
	m := newPlugin(t)
	require.NoError(t, os.WriteFile(m.ConfigPath, []byte(strings.Replace(testConfig, "serial: 2026112901", "serial: 2026112902", 1)), 0o644))
	m.reload()
	soa, ok := soaSerial(m.pipe.Store().Load(), "gslb.test.")
	assert.True(t, ok)
	assert.Equal(t, uint32(2026112902), soa)
	assert.Nil(t, m.notify.wake, "no sender runs")
}
