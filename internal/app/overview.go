package app

import "github.com/meridian-gslb/meridian/internal/api"

// overview is GET /v1/overview and the data of the live status page: the
// current snapshot combined with the decided health behind it.
func (a *App) overview() api.Overview {
	return api.BuildOverview(a.store.Load(), a.healthReport())
}
