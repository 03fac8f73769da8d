package model

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// parallelMin is the list length from which eachChunk uses every core
// (below it the goroutines cost more than they save).
var parallelMin = 2048

// eachChunk calls f(i) for every i in [0, n): in order on the caller's
// goroutine for a short list, else on GOMAXPROCS goroutines that take
// chunks of 256 indexes in turn. f must touch only what belongs to i.
func eachChunk(n int, f func(i int)) {
	const chunk = 256
	workers := min(runtime.GOMAXPROCS(0), (n+chunk-1)/chunk)
	if n < parallelMin || workers < 2 {
		for i := range n {
			f(i)
		}
		return
	}
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		mu       sync.Mutex
		panicked any
	)
	for range workers {
		wg.Go(func() {
			defer func() {
				if v := recover(); v != nil {
					mu.Lock()
					if panicked == nil {
						panicked = v
					}
					mu.Unlock()
				}
			}()
			for {
				lo := int(next.Add(chunk)) - chunk
				if lo >= n {
					return
				}
				for i := lo; i < min(lo+chunk, n); i++ {
					f(i)
				}
			}
		})
	}
	wg.Wait()
	if panicked != nil {
		panic(panicked)
	}
}
