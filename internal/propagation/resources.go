package propagation

import (
	"context"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/meridian-gslb/meridian/internal/placement"
)

// rank chooses clusters by selector and score.
func (c *Controller) rank(ctx context.Context, spec Spec, registered map[string]map[string]string) ([]string, map[string]float64) {
	sel, err := placement.ParseSelector(spec.Selector)
	if err != nil {
		return nil, nil
	}
	health := map[string]bool{}
	for _, h := range c.env.Health() {
		health[h.Cluster] = h.Failed
	}
	var cands []placement.Candidate
	for cl, lbls := range registered {
		if cl == c.opts.Hub || !sel.Matches(labels.Set(lbls)) {
			continue
		}
		cost, _ := strconv.ParseFloat(lbls["meridian.io/cost"], 64)
		_, ready := c.env.Config(cl)
		cands = append(cands, placement.Candidate{Cluster: cl, Labels: lbls, Resources: c.resources(ctx, cl),
			Available: ready && !health[cl], Cost: max(cost, 0)})
	}
	return placement.Rank(cands, c.opts.Score, spec.MaxClusters)
}

// resources reads a member's free CPU, memory and GPUs: node allocatable
// minus the requests of its scheduled, non-terminal pods (cached 30s).
func (c *Controller) resources(ctx context.Context, cl string) placement.Resources {
	c.mu.Lock()
	if rc, ok := c.res[cl]; ok && c.opts.Now().Sub(rc.at) < 30*time.Second {
		c.mu.Unlock()
		return rc.res
	}
	c.mu.Unlock()
	var r placement.Resources
	cfg, ok := c.env.Config(cl)
	if !ok {
		return r
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return r
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		c.log.Debug("propagation: listing nodes failed", "cluster", cl, "err", err)
		return r
	}
	for _, n := range nodes.Items {
		r.FreeMilliCPU += n.Status.Allocatable.Cpu().MilliValue()
		r.FreeMemory += n.Status.Allocatable.Memory().Value()
		r.FreeGPU += gpus(n.Status.Allocatable)
	}
	pods, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "status.phase!=Succeeded,status.phase!=Failed"})
	if err == nil {
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" {
				continue
			}
			for _, ctr := range p.Spec.Containers {
				r.FreeMilliCPU -= ctr.Resources.Requests.Cpu().MilliValue()
				r.FreeMemory -= ctr.Resources.Requests.Memory().Value()
				r.FreeGPU -= gpus(ctr.Resources.Requests)
			}
		}
	}
	c.mu.Lock()
	c.res[cl] = resCache{at: c.opts.Now(), res: r}
	c.mu.Unlock()
	return r
}

// gpus counts the GPUs of the known vendors in a resource list.
func gpus(l corev1.ResourceList) int64 {
	var n int64
	for name, q := range l {
		if name == "nvidia.com/gpu" || name == "amd.com/gpu" || name == "gpu.intel.com/i915" {
			n += q.Value()
		}
	}
	return n
}
