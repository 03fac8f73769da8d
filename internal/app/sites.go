package app

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"time"

	"github.com/meridian-gslb/meridian/internal/kube"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/ring"
)

// advertiseWait bounds how long a node waits at start for the Service of
// ring.advertise_from to get an external address (a cloud load balancer
// takes a minute or two); after it the start fails and, in Kubernetes, the
// container is restarted.
const advertiseWait = 10 * time.Minute

// advertiseFrom returns the gossip address to advertise: ring.advertise, or
// the external address of the Service ring.advertise_from names, waited
// for. A later change of that address restarts the node (memberlist cannot
// change the address it advertises), after which it starts with the new one.
func (a *App) advertiseFrom(d *model.Desired) (string, error) {
	ref := d.Ring.AdvertiseFrom
	if ref == nil {
		return d.Ring.Advertise, nil
	}
	host, _ := os.Hostname()
	w := &kube.ServiceWatch{Ref: *ref, Host: host, Logger: a.log}
	if err := w.Check(); err != nil {
		return "", fmt.Errorf("ring.advertise_from: %w", err)
	}
	ctx, cancel := context.WithTimeout(a.ctx, advertiseWait)
	defer cancel()
	var addr kube.ServiceAddress
	for {
		var err error
		addr, err = w.Get(ctx)
		if err == nil && len(addr.Addrs) > 0 {
			break
		}
		a.log.Info("waiting for the external address of the gossip Service (ring.advertise_from)", "service", w.Namespace()+"/"+w.Name(), "err", err)
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("ring.advertise_from: service %s/%s has no external address after %s (its LoadBalancer is not provisioned? `kubectl -n %s get service %s`): %v",
				w.Namespace(), w.Name(), advertiseWait, w.Namespace(), w.Name(), err)
		case <-time.After(5 * time.Second):
		}
	}
	port := addr.Port
	if port == 0 {
		_, p, _ := net.SplitHostPort(d.Ring.Bind)
		port, _ = strconv.Atoi(p)
	}
	adv := net.JoinHostPort(addr.Addrs[0].String(), strconv.Itoa(port))
	first := addr
	w.OnChange = func(now kube.ServiceAddress) {
		if len(now.Addrs) == 0 || now.Addrs[0] == first.Addrs[0] && (now.Port == first.Port || now.Port == 0) {
			return
		}
		a.restart(fmt.Sprintf("the external address of the gossip Service %s/%s changed from %s to %v (ring.advertise_from): restarting to advertise it", w.Namespace(), w.Name(), adv, now.Addrs))
	}
	a.goBackground(w.Run)
	a.log.Info("gossip address from the Service (ring.advertise_from)", "service", w.Namespace()+"/"+w.Name(), "advertise", adv, "bind", d.Ring.Bind)
	return adv, nil
}

// announceDNS keeps the site's DNS addresses in this node's ring metadata:
// ring.dns_addresses, or those of the Service ring.dns_addresses_from names.
func (a *App) announceDNS(d *model.Desired, r *ring.Ring) error {
	if ref := d.Ring.DNSAddressesFrom; ref != nil {
		host, _ := os.Hostname()
		w := &kube.ServiceWatch{Ref: *ref, Host: host, Logger: a.log}
		if err := w.Check(); err != nil {
			return fmt.Errorf("ring.dns_addresses_from: %w", err)
		}
		w.OnChange = func(addr kube.ServiceAddress) {
			if err := r.SetDNSAddresses(addr.Addrs); err != nil {
				a.log.Error("this site's DNS addresses not announced", "service", w.Namespace()+"/"+w.Name(), "err", err)
			}
		}
		a.goBackground(w.Run)
		return nil
	}
	var addrs []netip.Addr
	for _, s := range d.Ring.DNSAddresses {
		ip, err := netip.ParseAddr(s)
		if err != nil {
			return fmt.Errorf("ring.dns_addresses: %w", err)
		}
		addrs = append(addrs, ip)
	}
	return r.SetDNSAddresses(addrs)
}

// restart ends Run with an error saying why, so that the process exits
// and its supervisor (Kubernetes, systemd) starts it again.
func (a *App) restart(why string) {
	a.log.Error(why)
	select {
	case a.quit <- why:
	default:
	}
}
