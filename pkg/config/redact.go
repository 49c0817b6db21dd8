package config

import "net/url"

// RedactURL returns the URL s with its user information (a name and a
// password, which some S3-compatible endpoints take) replaced by
// "REDACTED", and ok false when s does not parse as a URL: then nothing of
// it is safe to print.
func RedactURL(s string) (string, bool) {
	u, err := url.Parse(s)
	if err != nil {
		return "", false
	}
	if u.User != nil {
		u.User = url.User("REDACTED")
	}
	return u.String(), true
}

// Printable returns how an error message may show value, the value of the
// setting named name, and false when it must not show it at all. Values of
// settings whose syntax cannot hold a secret (numbers, sizes, rates,
// choices, interface and region names) are shown as given; a URL is shown
// without its user information; a value of an unknown setting, which may
// be anything, is never shown.
func Printable(name, value string) (string, bool) {
	switch name {
	case "profile", "preset", "config":
		return value, true // names of profiles and presets, a file's path
	}
	def, ok := Lookup(name)
	if !ok {
		return "", false
	}
	if def.Syntax == "url" {
		return RedactURL(value)
	}
	return value, true
}
