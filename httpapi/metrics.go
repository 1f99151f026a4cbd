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

	// series caches each (route, status)'s pair of series (metricKey →
	// *metricSeries), so that the hot path neither allocates nor takes a
	// lock: a sync.Map's loads of keys it has are lock-free.
	series sync.Map
}

// metricSeries are one route and status's series.
type metricSeries struct {
	latency  prometheus.Observer
	requests prometheus.Counter
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

// observe records one request; the label lookups are cached per route
// and status.
func (m *metrics) observe(route string, status int, d time.Duration) {
	k := metricKey{route, status}
	v, ok := m.series.Load(k)
	if !ok {
		st := strconv.Itoa(status)
		v, _ = m.series.LoadOrStore(k, &metricSeries{latency: m.latency.WithLabelValues(route, st), requests: m.requests.WithLabelValues(route, st)})
	}
	ms := v.(*metricSeries)
	ms.requests.Inc()
	ms.latency.Observe(d.Seconds())
}
