// Command coredns-meridian is CoreDNS with the meridian plugin compiled in:
// CoreDNS's usual plugin set, with meridian placed among the plugins that
// serve data (right before file).
package main

import (
	"slices"

	"github.com/coredns/coredns/core/dnsserver"
	_ "github.com/coredns/coredns/core/plugin" // CoreDNS's usual plugins
	"github.com/coredns/coredns/coremain"

	_ "github.com/meridian-gslb/meridian/plugin/meridian"
)

func init() {
	i := slices.Index(dnsserver.Directives, "file")
	if i < 0 {
		i = len(dnsserver.Directives)
	}
	dnsserver.Directives = slices.Insert(dnsserver.Directives, i, "meridian")
}

func main() { coremain.Run() }
