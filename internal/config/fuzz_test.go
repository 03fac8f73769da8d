package config

import (
	"os"
	"testing"

	"github.com/meridian-gslb/meridian/internal/engine"
)

// FuzzParse feeds arbitrary bytes to the config loader: it must never panic,
// and whatever it accepts must compile into a snapshot.
func FuzzParse(f *testing.F) {
	demo, err := os.ReadFile("../../deploy/examples/demo.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(demo)
	f.Add([]byte(base))
	f.Add([]byte("zones: [{apex: a.test, nameservers: [{name: ns.b.test}]}]\nclusters: [{name: c, region: r}]\nservices: [{name: x.a.test, strategy: failover, endpoints: [{address: 192.0.2.1, cluster: c, priority: 1}]}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("fuzz.yaml", data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if _, err := engine.Compile(&file.Desired, engine.Options{}); err != nil {
			t.Fatalf("accepted config does not compile: %v\n%s", err, data)
		}
	})
}
