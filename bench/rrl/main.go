// Command rrl measures response rate limiting with a real client against
// `meridian serve` on loopback, RRL at its defaults (200/s per /24 and
// response identity, window 15 s, slip 2): for each scenario one client
// sends RRL_RATE queries/s for RRL_SECONDS from one socket of its own /24
// and counts full answers, slipped (TC=1, empty) replies and queries with
// no reply. See bench/README.md ("RRL with a real client").
//
// Scenarios:
//
//	many-names  the queries spread round-robin over 1 000 served names
//	one-name    every query for the same name
//	nxdomain    every query for a new random name that does not exist
//	exempt      every query for the same name, from a source in rrl.exempt
//
// Environment: MERIDIAN_BIN (required), RRL_RATE=2000, RRL_SECONDS=10,
// RRL_PORT=5397, RRL_NAMES=1000, RRL_SCENARIOS="many-names one-name
// nxdomain exempt" (without exempt the config has no rrl.exempt, so a
// binary from before it existed can be measured too).
package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/bench/internal/benchenv"
)

const zone = "rrl.bench.meridian.test"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench/rrl:", err)
		os.Exit(1)
	}
}

// scenario is one client run: its source address and the i-th query name.
type scenario struct {
	name, what string
	src        string
	qname      func(i int) string
}

// tally is what the client got back.
type tally struct{ sent, answered, slipped, refused int64 }

// run starts meridian and floods it with each scenario in turn, printing a
// markdown table of what the client got back.
func run() error {
	var env benchenv.Env
	bin := os.Getenv("MERIDIAN_BIN")
	rate := env.Int("RRL_RATE", 2000, 1, 100_000)
	secs := env.Int("RRL_SECONDS", 10, 1, 300)
	port := env.Int("RRL_PORT", 5397, 1024, 65535)
	names := env.Int("RRL_NAMES", 1000, 1, 100_000)
	only := env.List("RRL_SCENARIOS", []string{"many-names", "one-name", "nxdomain", "exempt"})
	if bin == "" {
		env.Add(errors.New("MERIDIAN_BIN is not set (the meridian binary to run, e.g. bin/meridian)"))
	}
	if err := env.Err(); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "bench-rrl-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	stop, err := startMeridian(bin, dir, meridianConfig(addr, names, slices.Contains(only, "exempt")), addr)
	if err != nil {
		return err
	}
	defer stop()
	fmt.Printf("RRL defaults (200/s per /24 and response identity, window 15 s, slip 2); client: %d queries/s for %d s per scenario\n\n", rate, secs)
	fmt.Println("| scenario | queries | answered | slipped (TC) | no reply | answered % |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, sc := range scenarios(names) {
		if !slices.Contains(only, sc.name) {
			continue
		}
		t, err := flood(addr, sc, rate, time.Duration(secs)*time.Second)
		if err != nil {
			return fmt.Errorf("%s: %w", sc.name, err)
		}
		lost := t.sent - t.answered - t.slipped - t.refused
		fmt.Printf("| %s (%s) | %d | %d | %d | %d | %.2f |\n", sc.name, sc.what, t.sent, t.answered, t.slipped, lost,
			100*float64(t.answered)/float64(t.sent))
	}
	return nil
}

// scenarios are the four client runs, over names served names.
func scenarios(names int) []scenario {
	rnd := rand.New(rand.NewPCG(1, 2))
	return []scenario{
		{"many-names", fmt.Sprintf("%d names round-robin", names), "127.0.1.10", func(i int) string { return fmt.Sprintf("n%d.%s.", i%names, zone) }},
		{"one-name", "one name", "127.0.2.10", func(int) string { return "n7." + zone + "." }},
		{"nxdomain", "a random nonexistent name each", "127.0.3.10", func(int) string { return fmt.Sprintf("r%016x.%s.", rnd.Uint64(), zone) }},
		{"exempt", "one name, source in rrl.exempt", "127.0.9.10", func(int) string { return "n7." + zone + "." }},
	}
}

// startMeridian writes config into dir, starts `meridian serve` on it
// (logging to dir/meridian.log) and waits until it answers on addr; stop
// ends it.
func startMeridian(bin, dir, config, addr string) (stop func(), err error) {
	cfg := filepath.Join(dir, "meridian.yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "meridian.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve", "--config", cfg)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	stop = func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		logf.Close()
	}
	if err := waitServing(addr, 30*time.Second); err != nil {
		b, _ := os.ReadFile(logf.Name())
		stop()
		return nil, fmt.Errorf("%w; log:\n%s", err, b)
	}
	return stop, nil
}

// meridianConfig is a meridian config with names weighted services under zone,
// RRL at its defaults and, with exempt, 127.0.9.0/24 exempt.
func meridianConfig(addr string, names int, exempt bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, `server:
  dns:
    listen: [%q]
    udp_sockets: 1
`, addr)
	if exempt {
		b.WriteString("    rrl: {exempt: [127.0.9.0/24]}\n")
	}
	fmt.Fprintf(&b, `  http: {listen: "off"}
  log: {level: warn}
zones:
  - apex: %s
    nameservers: [{name: ns1.%s, ipv4: [127.0.0.1]}]
clusters:
  - {name: east, region: us-east}
  - {name: west, region: us-west}
services:
`, zone, zone)
	for i := range names {
		fmt.Fprintf(&b, "  - {name: n%d.%s, endpoints: [{address: 192.0.2.1, cluster: east, weight: 700}, {address: 192.0.2.2, cluster: west, weight: 300}]}\n", i, zone)
	}
	return b.String()
}

// waitServing waits until addr answers the first name.
func waitServing(addr string, limit time.Duration) error {
	c := &dns.Client{Timeout: 500 * time.Millisecond}
	m := new(dns.Msg)
	m.SetQuestion("n0."+zone+".", dns.TypeA)
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if r, _, err := c.Exchange(m, addr); err == nil && r.Rcode == dns.RcodeSuccess {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("meridian did not answer on %s within %v", addr, limit)
}

// flood sends rate queries/s for d from sc.src (paced per millisecond) and
// counts the replies, reading for one second after the last query.
func flood(addr string, sc scenario, rate int, d time.Duration) (tally, error) {
	var t tally
	server, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return t, err
	}
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(sc.src+":0")))
	if err != nil {
		return t, err
	}
	defer conn.Close()
	conn.SetReadBuffer(4 << 20)
	var rs replies
	done := make(chan struct{})
	go func() {
		defer close(done)
		rs.read(conn)
	}()
	m := new(dns.Msg)
	buf := make([]byte, 512)
	start := time.Now()
	total := int(int64(rate) * int64(d) / int64(time.Second))
	for i := 0; i < total; i++ {
		if due := start.Add(time.Duration(int64(i) * int64(time.Second) / int64(rate))); time.Until(due) > time.Millisecond {
			time.Sleep(time.Until(due))
		}
		m.SetQuestion(sc.qname(i), dns.TypeA)
		m.Id = uint16(i)
		wire, err := m.PackBuffer(buf)
		if err != nil {
			return t, err
		}
		if _, err := conn.WriteToUDP(wire, server); err != nil {
			return t, err
		}
		t.sent++
	}
	conn.SetReadDeadline(time.Now().Add(time.Second))
	<-done
	t.answered, t.slipped, t.refused = rs.answered.Load(), rs.slipped.Load(), rs.refused.Load()
	return t, nil
}

// replies counts the replies a flood gets back.
type replies struct{ answered, slipped, refused atomic.Int64 }

// read counts the replies arriving on conn until reading fails (the
// deadline after the last query).
func (rs *replies) read(conn *net.UDPConn) {
	buf := make([]byte, 4096)
	r := new(dns.Msg)
	for {
		n, err := conn.Read(buf)
		if err != nil {
			return // the deadline after the last query
		}
		if r.Unpack(buf[:n]) != nil {
			continue
		}
		switch {
		case r.Truncated && len(r.Answer) == 0:
			rs.slipped.Add(1)
		case r.Rcode == dns.RcodeSuccess || r.Rcode == dns.RcodeNameError:
			rs.answered.Add(1)
		default:
			rs.refused.Add(1)
		}
	}
}
