// Command corednsfixed is the baseline of the plugin-overhead benchmark
// (bench/run.sh, server coredns-fixed): the same CoreDNS as
// cmd/coredns-meridian, with the same plugin set and the answering plugin in
// the same place in the chain, but that plugin is fixed, which answers every
// query with one constant A record. The QPS of coredns-meridian divided by
// the QPS of this binary is what the meridian plugin costs on top of CoreDNS.
//
// It lives under bench/ because it is a measuring instrument, not something
// to deploy.
package main

import (
	"slices"

	"github.com/coredns/coredns/core/dnsserver"
	_ "github.com/coredns/coredns/core/plugin" // CoreDNS's usual plugins, as in cmd/coredns-meridian
	"github.com/coredns/coredns/coremain"
)

// Same position as cmd/coredns-meridian gives meridian: right before file.
func init() {
	i := slices.Index(dnsserver.Directives, "file")
	if i < 0 {
		i = len(dnsserver.Directives)
	}
	dnsserver.Directives = slices.Insert(dnsserver.Directives, i, pluginName)
}

func main() { coremain.Run() }
