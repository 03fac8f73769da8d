package serving

import (
	"time"

	"github.com/meridian-gslb/meridian/internal/whatif"
)

// Simulate reports what the changes would do to the answers, without
// changing anything: they become overrides (validated like the admin
// API's), compiled with the current inputs beside the served snapshot.
func (p *Pipeline) Simulate(changes []whatif.Change) (whatif.Report, error) {
	s := p.State()
	ovs, err := whatif.Overrides(changes, &s.Effective.Desired, time.Now())
	if err != nil {
		return whatif.Report{}, err
	}
	after, err := p.whatIf(s, ovs)
	if err != nil {
		return whatif.Report{}, err
	}
	return whatif.Compare(s.Snapshot, after, changes), nil
}
