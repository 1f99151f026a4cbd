// Package bench holds Trove's end-to-end benchmarks, in its test files
// only: the HTTP API served as trove serve serves it (Server.HTTPServer on
// loopback, over core and SQLite), driven by internal/loadgen, next to
// baselines measured in the same run. No product package imports it;
// deps_test.go checks that the trove binary links neither it nor the load
// generator.
//
//	go test -run '^$' -bench . -benchtime 2000x ./internal/bench/
//
// See docs/PERFORMANCE.md for what each metric means and the figures.
package bench
