package httpapi

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the request count and latency by route and status.
type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec

	mu   sync.RWMutex
	obs  map[metricKey]prometheus.Observer
	ctrs map[metricKey]prometheus.Counter
}

type metricKey struct {
	route  string
	status int
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trove_http_requests_total",
			Help: "HTTP requests served, by route and status.",
		}, []string{"route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "trove_http_request_duration_seconds",
			Help:    "HTTP request latency, by route and status.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route", "status"}),
		obs:  map[metricKey]prometheus.Observer{},
		ctrs: map[metricKey]prometheus.Counter{},
	}
	// A registry shared by two servers keeps the first server's collectors.
	if err := reg.Register(m.requests); err != nil {
		if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
			m.requests = are.ExistingCollector.(*prometheus.CounterVec)
		}
	}
	if err := reg.Register(m.latency); err != nil {
		if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
			m.latency = are.ExistingCollector.(*prometheus.HistogramVec)
		}
	}
	return m
}

// observe records one request; label lookups are cached per route and
// status so the hot path does not allocate.
func (m *metrics) observe(route string, status int, d time.Duration) {
	k := metricKey{route, status}
	m.mu.RLock()
	o, c := m.obs[k], m.ctrs[k]
	m.mu.RUnlock()
	if o == nil {
		st := strconv.Itoa(status)
		o = m.latency.WithLabelValues(route, st)
		c = m.requests.WithLabelValues(route, st)
		m.mu.Lock()
		m.obs[k], m.ctrs[k] = o, c
		m.mu.Unlock()
	}
	c.Inc()
	o.Observe(d.Seconds())
}
