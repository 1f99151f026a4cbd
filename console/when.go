package console

import (
	"html/template"
	"strconv"
	"time"
)

// utcLayout is how the console writes an exact time.
const utcLayout = "2006-01-02 15:04:05 UTC"

// ago says how long before now t was, as people say it: "just now",
// "3 minutes ago", "yesterday", "5 months ago"; a t after now (another
// clock) reads "in 2 minutes".
func ago(now, t time.Time) string {
	d := now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	if d < time.Minute {
		return "just now"
	}
	var n int64
	var unit string
	switch {
	case d < time.Hour:
		n, unit = int64(d/time.Minute), "minute"
	case d < 24*time.Hour:
		n, unit = int64(d/time.Hour), "hour"
	case d < 30*24*time.Hour:
		n, unit = int64(d/(24*time.Hour)), "day"
		if n == 1 && !future {
			return "yesterday"
		}
		if n == 1 {
			return "tomorrow"
		}
	case d < 365*24*time.Hour:
		n, unit = int64(d/(30*24*time.Hour)), "month"
	default:
		n, unit = int64(d/(365*24*time.Hour)), "year"
	}
	s := strconv.FormatInt(n, 10) + " " + unit
	if n != 1 {
		s += "s"
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

// timeHTML is a time as the console shows it: relative to now, with the
// exact UTC time in the element's datetime and in its title (the hover).
// Everything in it is formatted from t, never text from a store.
func timeHTML(now, t time.Time) template.HTML {
	u := t.UTC()
	return template.HTML(`<time datetime="` + u.Format(time.RFC3339) + `" title="` + u.Format(utcLayout) + `">` + ago(now, t) + `</time>`)
}
