package postgres_test

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// machineCPU returns the CPU time every core of the machine has spent
// busy since boot (user, nice, system, irq and softirq of /proc/stat's
// "cpu" line, at USER_HZ = 100), or -1 where there is no /proc/stat. The
// search-index benchmark uses it because the work it weighs is spread over
// PostgreSQL's backends and the benchmark's process on the same machine.
func machineCPU() time.Duration {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return -1
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return -1
	}
	var jiffies int64
	for _, i := range []int{1, 2, 3, 6, 7} { // user nice system (idle iowait) irq softirq
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return -1
		}
		jiffies += n
	}
	return time.Duration(jiffies) * 10 * time.Millisecond
}
