package scalegen_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/config/scalegen"
	"github.com/meridian-gslb/meridian/internal/model"
)

func TestWrite(t *testing.T) {
	t.Run("the generated file loads with every service and strategy of the mix", func(t *testing.T) {
		var buf bytes.Buffer
		require.NoError(t, scalegen.Write(&buf, scalegen.Options{Services: 30, Server: "  log: {level: warn}"}))
		f, err := config.Parse("gen.yaml", buf.Bytes())
		require.NoError(t, err)
		require.Len(t, f.Services, 30)
		assert.Equal(t, "warn", f.Server.Log.Level)
		count := map[string]int{}
		for _, s := range f.Services {
			count[s.Strategy]++
			assert.Len(t, s.Endpoints, 3, s.Name)
		}
		assert.Equal(t, map[string]int{model.StrategyWeighted: 10, model.StrategyGeo: 10, model.StrategyFailover: 10}, count)
		assert.Equal(t, scalegen.Name(29)+".", f.Services[29].Name)
	})
	t.Run("a strategy that is not generated is refused", func(t *testing.T) {
		err := scalegen.Write(&bytes.Buffer{}, scalegen.Options{Services: 1, Strategies: []string{"latency"}})
		require.ErrorContains(t, err, `strategy "latency" is not generated`)
	})
}
