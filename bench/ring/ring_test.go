package main

import (
	"strings"
	"testing"
)

func TestFailingSet(t *testing.T) {
	for _, tc := range []struct {
		name          string
		n, percent    int
		want          int
		wantEndpoints []int
	}{
		{"ten percent of a thousand is the last endpoint of every ten", 1000, 10, 100, []int{9, 19, 999}},
		{"all of them", 20, 100, 20, []int{0, 19}},
		{"less than one endpoint rounds down to none", 5, 10, 0, nil},
	} {
		got := failingSet(tc.n, tc.percent)
		if len(got) != tc.want {
			t.Errorf("%s: %d endpoints, want %d", tc.name, len(got), tc.want)
		}
		for _, i := range tc.wantEndpoints {
			if !got[endpointAddr(i)] {
				t.Errorf("%s: endpoint %d (%s) is not failing", tc.name, i, endpointAddr(i))
			}
		}
	}
}

func TestEndpointAddrsAreDistinct(t *testing.T) {
	seen := map[string]bool{}
	for i := range 5000 {
		a := endpointAddr(i).String()
		if seen[a] || !strings.HasPrefix(a, "127.1.") || strings.HasSuffix(a, ".0") {
			t.Fatalf("endpoint %d: %s (duplicate or not a usable 127.1.x.y address)", i, a)
		}
		seen[a] = true
	}
}

func TestLogField(t *testing.T) {
	line := `time=2026-12-01T10:00:00.000Z level=WARN msg="health decision changed" node=p1 reason=confirmation to=down`
	for key, want := range map[string]string{"level": "WARN", "msg": "health decision changed", "node": "p1", "to": "down", "time": "2026-12-01T10:00:00.000Z", "none": ""} {
		if got := field(line, key); got != want {
			t.Errorf("field %s: got %q, want %q", key, got, want)
		}
	}
}

func TestScanLogSeparatesShutdown(t *testing.T) {
	run := `time=t1 level=WARN msg="health decision changed" endpoint=127.1.0.1
time=t2 level=WARN msg="ring: member left or failed" member=p2
time=t3 level=ERROR msg="prober stopped" err=x
`
	stop := `time=t4 level=ERROR msg="memberlist: Failed to send gossip to 127.0.0.1:17400: use of closed network connection"
time=t5 level=WARN msg="ring shutdown" err="timeout waiting for leave broadcast"
`
	l := scanLog("p1", []byte(run+stop), int64(len(run)), []string{"health decision changed"})
	if l.Lines != 3 || l.Warns != 2 || l.Errors != 1 || l.Unexpected != 1 || l.Shutdown != 2 || l.Panic {
		t.Errorf("got %+v", l)
	}
	if l := scanLog("p1", []byte(run+"panic: boom\n"), 0, nil); !l.Panic {
		t.Error("a panic is not seen")
	}
}
