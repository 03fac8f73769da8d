package xfr_test

import (
	"log/slog"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/xfr"
)

// keySource is an xfr.KeySource of keys read before.
type keySource map[string]xfr.Key

func (k keySource) TSIGKey(file string) (xfr.Key, bool) {
	key, ok := k[file]
	return key, ok
}

func TestPublisher(t *testing.T) {
	f, err := config.Parse("test.yaml", []byte(zoneConfig))
	require.NoError(t, err)
	withTransfer := func(file string) *model.Desired {
		d := f.Desired
		d.Zones = slices.Clone(d.Zones)
		d.Zones[0].Transfer = &model.Transfer{Allow: []string{"127.0.0.1"}, TSIGKeyFile: file}
		return &d
	}
	keys := keySource{"xfr.key": {Name: keyName, Secret: keySecret, Algorithm: xfr.Algorithm}}
	log := slog.New(slog.DiscardHandler)

	t.Run("a zone with a transfer section gets a managed serial that moves only with its content", func(t *testing.T) {
		st := &engine.Store{}
		x := xfr.NewPublisher(st, keys, nil, xfr.Options{Logger: log})
		t.Cleanup(x.Server().Close)
		serial := func(snap *engine.Snapshot) uint32 {
			zd, ok := snap.ZoneData("xfr.test.")
			require.True(t, ok)
			return zd.SOA.Serial
		}
		d := withTransfer("xfr.key")
		s1, err := x.Publish(d, engine.Options{})
		require.NoError(t, err)
		assert.Same(t, s1, st.Load())
		s2, err := x.Publish(d, engine.Options{})
		require.NoError(t, err)
		assert.Equal(t, serial(s1), serial(s2), "same content, same serial")
		s3, err := x.Publish(d, engine.Options{Health: downHealth{"192.0.2.1": true}})
		require.NoError(t, err)
		assert.True(t, xfr.SerialLess(serial(s2), serial(s3)), "new content, a later serial")
	})

	t.Run("a key the source never read fails the publish naming the field", func(t *testing.T) {
		st := &engine.Store{}
		x := xfr.NewPublisher(st, keys, nil, xfr.Options{Logger: log})
		t.Cleanup(x.Server().Close)
		_, err := x.Publish(withTransfer("other.key"), engine.Options{})
		require.ErrorContains(t, err, "zones[0].transfer.tsig_key_file: other.key: not read")
		assert.Nil(t, st.Load(), "nothing published")
	})

	t.Run("zones without a transfer section are published as configured", func(t *testing.T) {
		st := &engine.Store{}
		x := xfr.NewPublisher(st, keySource{}, nil, xfr.Options{Logger: log})
		t.Cleanup(x.Server().Close)
		d := f.Desired
		d.Zones = slices.Clone(d.Zones)
		d.Zones[0].SOA.Serial = 7
		snap, err := x.Publish(&d, engine.Options{})
		require.NoError(t, err)
		zd, ok := snap.ZoneData("xfr.test.")
		require.True(t, ok)
		assert.Equal(t, uint32(7), zd.SOA.Serial)
	})
}
