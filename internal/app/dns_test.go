package app

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meridian-gslb/meridian/internal/model"
)

func TestWarnECSTrust(t *testing.T) {
	geoSvc := model.Service{Name: "www.gslb.test", Strategy: model.StrategyGeo}
	plain := model.Service{Name: "app.gslb.test", Strategy: model.StrategyWeighted}
	for _, tc := range []struct {
		name     string
		services []model.Service
		trusted  []string
		warned   bool
	}{
		{"a geo service without geo.ecs_trusted is warned about", []model.Service{plain, geoSvc}, nil, true},
		{"a geo service with geo.ecs_trusted listing resolvers is not", []model.Service{geoSvc}, []string{"192.0.2.0/24"}, false},
		{"an empty geo.ecs_trusted (trust none) is not", []model.Service{geoSvc}, []string{}, false},
		{"no service depending on the client's place is not", []model.Service{plain}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			d := &model.Desired{Services: tc.services, Geo: model.Geo{ECSTrusted: tc.trusted}}
			warnECSTrust(slog.New(slog.NewTextHandler(&out, nil)), d)
			if !tc.warned {
				assert.Empty(t, out.String())
				return
			}
			assert.Contains(t, out.String(), "level=WARN")
			assert.Contains(t, out.String(), "geo.ecs_trusted is not set: the EDNS Client Subnet option is trusted from every source")
			assert.Contains(t, out.String(), "services=1 first=www.gslb.test")
		})
	}
}
