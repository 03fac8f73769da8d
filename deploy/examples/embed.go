// Package examples embeds the example configurations so that `meridian serve`
// can start on the demo without any file.
package examples

import _ "embed"

// Demo is deploy/examples/demo.yaml.
//
//go:embed demo.yaml
var Demo []byte
