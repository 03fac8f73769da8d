//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
)

// Small programs that must run inside a host's namespace (an HTTP
// server, a pinger, UDP sender and sink, the loss loader) are this test
// binary itself, re-executed by `ip netns exec` with netnsHelperEnv set:
// init below runs the helper and exits before any test starts.

// netnsHelperEnv names the helper to run; the arguments follow in os.Args.
const netnsHelperEnv = "E2E_NETNS_HELPER"

// netnsProbeMagic starts every UDP datagram of udpsend, then a uint32 sequence.
const netnsProbeMagic = "mrdl"

func init() {
	mode := os.Getenv(netnsHelperEnv)
	if mode == "" {
		return
	}
	if err := netnsHelperMain(mode, os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "netns helper %s: %v\n", mode, err)
		os.Exit(1)
	}
	os.Exit(0)
}

func netnsHelperMain(mode string, args []string) error {
	need := map[string]int{"http": 2, "get": 2, "ping": 4, "udpsink": 1, "udpsend": 3, "bpfloss": 2, "delay": 4, "dnsq": 4, "hooksink": 1, "dnslb": 2}
	n, ok := need[mode]
	if !ok {
		return errors.New("unknown helper")
	}
	if len(args) != n {
		return fmt.Errorf("want %d arguments, got %q", n, args)
	}
	switch mode {
	case "http":
		return netnsHelperHTTP(args[0], args[1])
	case "get":
		timeout, err := time.ParseDuration(args[1])
		if err != nil {
			return err
		}
		return netnsHelperGet(args[0], timeout)
	case "ping":
		dst, err := netip.ParseAddr(args[0])
		if err != nil {
			return err
		}
		count, err := strconv.Atoi(args[1])
		if err != nil {
			return err
		}
		interval, err := time.ParseDuration(args[2])
		if err != nil {
			return err
		}
		wait, err := time.ParseDuration(args[3])
		if err != nil {
			return err
		}
		return netnsHelperPing(dst, count, interval, wait)
	case "udpsink":
		return netnsHelperUDPSink(args[0])
	case "hooksink":
		return netnsHelperHookSink(args[0]) // notify_test.go
	case "dnslb":
		return netnsHelperDNSLB(args[0], args[1]) // twosite_kube_test.go
	case "delay":
		return netnsHelperDelay(args[0], args[1], args[2], args[3])
	case "dnsq":
		count, err := strconv.Atoi(args[3])
		if err != nil {
			return err
		}
		return netnsHelperDNSQuery(args[0], args[1], args[2], count)
	case "udpsend":
		count, err := strconv.Atoi(args[1])
		if err != nil {
			return err
		}
		interval, err := time.ParseDuration(args[2])
		if err != nil {
			return err
		}
		return netnsHelperUDPSend(args[0], count, interval)
	default: // bpfloss
		percent, err := strconv.ParseFloat(args[1], 64)
		if err != nil {
			return err
		}
		return netnsHelperBPFLoss(args[0], percent)
	}
}

// netnsHelperHTTP serves 200 "ok" on path and 404 elsewhere until SIGTERM.
func netnsHelperHTTP(addr, path string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, "ok")
	})
	return netnsServe(ctx, ln, &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second})
}

// netnsServe prints "ready ADDR", serves until ctx ends (SIGTERM) and shuts
// the server down.
func netnsServe(ctx context.Context, ln net.Listener, srv *http.Server) error {
	fmt.Printf("ready %s\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(shutdown)
	}
}

// netnsHelperGet prints "status <code>" and the body of a GET.
func netnsHelperGet(url string, timeout time.Duration) error {
	resp, err := (&http.Client{Timeout: timeout}).Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	fmt.Printf("status %d\n%s", resp.StatusCode, body)
	return nil
}

// netnsHelperPing sends count ICMP echo requests to dst, interval apart, then
// waits up to wait for the replies; it prints "received N rtt D" with the
// smallest round trip (0 when nothing came back).
func netnsHelperPing(dst netip.Addr, count int, interval, wait time.Duration) error {
	c, err := icmp.ListenPacket("ip4:icmp", "0.0.0.0")
	if err != nil {
		return err
	}
	defer c.Close()
	id := os.Getpid() & 0xffff
	sent := make([]time.Time, count)
	for seq := range count {
		msg := icmp.Message{Type: ipv4.ICMPTypeEcho, Body: &icmp.Echo{ID: id, Seq: seq, Data: []byte(netnsProbeMagic)}}
		b, err := msg.Marshal(nil)
		if err != nil {
			return err
		}
		sent[seq] = time.Now()
		// A send error (a blocked route, no carrier) is a lost packet.
		_, _ = c.WriteTo(b, &net.IPAddr{IP: dst.AsSlice()})
		if seq < count-1 {
			time.Sleep(interval)
		}
	}
	got := map[int]bool{}
	var best time.Duration
	buf := make([]byte, 1500)
	if err := c.SetReadDeadline(time.Now().Add(wait)); err != nil {
		return err
	}
	for len(got) < count {
		n, peer, err := c.ReadFrom(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			break
		}
		if err != nil {
			return err
		}
		m, err := icmp.ParseMessage(1, buf[:n])
		if err != nil || m.Type != ipv4.ICMPTypeEchoReply {
			continue
		}
		echo, ok := m.Body.(*icmp.Echo)
		if !ok || echo.ID != id || echo.Seq < 0 || echo.Seq >= count || got[echo.Seq] {
			continue
		}
		if from, ok := peer.(*net.IPAddr); !ok || !from.IP.Equal(dst.AsSlice()) {
			continue
		}
		got[echo.Seq] = true
		if rtt := time.Since(sent[echo.Seq]); best == 0 || rtt < best {
			best = rtt
		}
	}
	fmt.Printf("received %d rtt %s\n", len(got), best)
	return nil
}

// netnsHelperUDPSink counts the distinct udpsend datagrams reaching addr and
// prints "received N" on SIGTERM.
func netnsHelperUDPSink(addr string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	c, err := net.ListenPacket("udp4", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	fmt.Printf("ready %s\n", c.LocalAddr())
	var mu sync.Mutex
	seen := map[uint32]bool{}
	go func() {
		buf := make([]byte, 64)
		for {
			n, _, err := c.ReadFrom(buf)
			if err != nil {
				return
			}
			if n == len(netnsProbeMagic)+4 && string(buf[:len(netnsProbeMagic)]) == netnsProbeMagic {
				mu.Lock()
				seen[binary.BigEndian.Uint32(buf[len(netnsProbeMagic):n])] = true
				mu.Unlock()
			}
		}
	}()
	<-ctx.Done()
	mu.Lock()
	defer mu.Unlock()
	fmt.Printf("received %d\n", len(seen))
	return nil
}

// netnsHelperUDPSend sends count numbered datagrams to addr, interval apart.
func netnsHelperUDPSend(addr string, count int, interval time.Duration) error {
	c, err := net.Dial("udp4", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	msg := make([]byte, len(netnsProbeMagic)+4)
	copy(msg, netnsProbeMagic)
	for seq := range count {
		binary.BigEndian.PutUint32(msg[len(netnsProbeMagic):], uint32(seq))
		// Send errors (ICMP-refused from a previous datagram) are loss.
		_, _ = c.Write(msg)
		time.Sleep(interval)
	}
	fmt.Printf("sent %d\n", count)
	return nil
}

var netnsSelf = sync.OnceValues(os.Executable)

// netnsHelperEnvFor is the environment to add for running helper mode.
// Under -race, a binary sleeps a second at exit waiting for late reports
// (GORACE atexit_sleep_ms); helpers exit often, so they do not wait.
func netnsHelperEnvFor(mode string) []string {
	return []string{
		netnsHelperEnv + "=" + mode,
		"GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"),
	}
}

// runNetnsHelper runs helper mode with args in namespace ns to completion
// and returns its stdout; a failure's error carries its stderr.
func runNetnsHelper(ctx context.Context, ns, mode string, args ...string) (string, error) {
	self, err := netnsSelf()
	if err != nil {
		return "", fmt.Errorf("netns helper: test binary: %w", err)
	}
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns, self}, args...)...)
	cmd.Env = append(os.Environ(), netnsHelperEnvFor(mode)...)
	labKillGroupOnCancel(cmd)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s in %s: %w: %s", mode, ns, err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// startHelper starts a long-running helper in the host's namespace.
func (h *Host) startHelper(t testing.TB, logPrefix, mode string, args ...string) *Proc {
	t.Helper()
	self, err := netnsSelf()
	require.NoError(t, err, "netns helper: test binary")
	return h.start(t, logPrefix, netnsHelperEnvFor(mode), self, args...)
}

// pingStats sends count echo requests 10ms apart and waits up to a
// second after the last one.
func (h *Host) pingStats(t testing.TB, dst netip.Addr, count int) (int, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), labCmdTimeout)
	defer cancel()
	out, err := runNetnsHelper(ctx, h.NS, "ping", dst.String(), strconv.Itoa(count), "10ms", "1s")
	require.NoError(t, err, "%s: ping %s", h.Name, dst)
	var received int
	var rtt string
	_, err = fmt.Sscanf(out, "received %d rtt %s", &received, &rtt)
	require.NoError(t, err, "%s: ping %s: output %q", h.Name, dst, out)
	d, err := time.ParseDuration(rtt)
	require.NoError(t, err, "%s: ping %s: output %q", h.Name, dst, out)
	return received, d
}

// Ping sends count ICMP echo requests from h to dst (10ms apart) and
// returns how many were answered within a second of the last one.
func (h *Host) Ping(t testing.TB, dst netip.Addr, count int) int {
	t.Helper()
	n, _ := h.pingStats(t, dst, count)
	return n
}

// RTT returns the smallest of three ping round trips from h to dst; it
// fails the test when none is answered.
func (h *Host) RTT(t testing.TB, dst netip.Addr) time.Duration {
	t.Helper()
	n, rtt := h.pingStats(t, dst, 3)
	if n == 0 {
		t.Fatalf("%s: RTT: %s does not answer", h.Name, dst)
	}
	return rtt
}

// HTTPGet fetches url from inside h's namespace and returns the status
// and body. It gives up at ctx's deadline (10s without one); err is the
// client's error (connection refused, timeout ...).
func (h *Host) HTTPGet(t testing.TB, ctx context.Context, url string) (int, string, error) {
	t.Helper()
	timeout := 10 * time.Second
	if deadline, ok := ctx.Deadline(); ok {
		timeout = time.Until(deadline)
	}
	// The helper gives up on its own; the command's context is a backstop.
	run, cancel := context.WithTimeout(context.Background(), timeout+labCmdTimeout)
	defer cancel()
	out, err := runNetnsHelper(run, h.NS, "get", url, timeout.String())
	if err != nil {
		return 0, "", fmt.Errorf("%s: GET %s: %w", h.Name, url, err)
	}
	first, body, _ := strings.Cut(out, "\n")
	code, err := strconv.Atoi(strings.TrimPrefix(first, "status "))
	require.NoError(t, err, "%s: GET %s: output %q", h.Name, url, out)
	return code, body, nil
}

// MeasureLoss sends n numbered UDP datagrams from one host to another,
// 1ms apart, and returns the fraction that did not arrive (one way).
func (l *Lab) MeasureLoss(t testing.TB, from, to *Host, n int) float64 {
	t.Helper()
	require.Positive(t, n)
	sink := to.startHelper(t, "udpsink", "udpsink", netip.AddrPortFrom(to.IP, 0).String())
	addr := strings.TrimPrefix(sink.WaitFor(t, "ready ", 10*time.Second), "ready ")
	ctx, cancel := context.WithTimeout(context.Background(), labCmdTimeout+time.Duration(n)*2*time.Millisecond)
	defer cancel()
	_, err := runNetnsHelper(ctx, from.NS, "udpsend", addr, strconv.Itoa(n), "1ms")
	require.NoError(t, err, "%s: udpsend to %s", from.Name, to.Name)
	l.mu.Lock()
	grace := 300*time.Millisecond + l.delay[from.index] + l.delay[to.index]
	l.mu.Unlock()
	time.Sleep(grace) // the last datagrams in flight
	require.NoError(t, sink.Stop(), "udpsink on %s", to.Name)
	var received int
	_, err = fmt.Sscanf(sink.lineWith("received "), "received %d", &received)
	require.NoError(t, err, "udpsink on %s: output %q", to.Name, sink.Output())
	return 1 - float64(received)/float64(n)
}
