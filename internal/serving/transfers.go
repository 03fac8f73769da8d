package serving

import (
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/model"
)

// Publisher publishes to the pipeline's store, which it is given by
// Options.Transfers, with what zones with a transfer section need: managed
// serials, the transfer server's zones and history, and NOTIFY
// (internal/xfr.Publisher), and, with a catalog section, the catalog zone
// of those zones (RFC 9432). Publish is called under the pipeline's lock,
// one call at a time; it must not read the disk (it takes its TSIG keys
// from a key source such as internal/zonekeys).
type Publisher interface {
	Publish(d *model.Desired, opts engine.Options) (*engine.Snapshot, error)
}
