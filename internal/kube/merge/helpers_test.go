package merge

import (
	"log/slog"
	"testing"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/serving"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func load(t *testing.T, text string) *serving.Loaded {
	t.Helper()
	l, err := serving.Load("test.yaml", []byte(text), "")
	require.NoError(t, err)
	return l
}

// answers returns the A records the pipeline's snapshot gives for name:
// enough draws that every address in the answer set shows up.
func answers(t testing.TB, p *serving.Pipeline, name string) map[string]bool {
	t.Helper()
	return snapshotAnswers(t, p.Store().Load(), name)
}

// snapshotAnswers is answers of one snapshot.
func snapshotAnswers(t testing.TB, snap *engine.Snapshot, name string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	require.NotNil(t, snap)
	for range 64 {
		var r engine.Result
		snap.Lookup(name, dns.TypeA, engine.Client{}, &r)
		for _, rr := range r.Answer {
			if a, ok := rr.(*dns.A); ok {
				out[a.A.String()] = true
			}
		}
	}
	return out
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
