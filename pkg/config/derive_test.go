package config

import (
	"errors"
	"strings"
	"testing"
)

func TestDerive(t *testing.T) {
	tests := []struct {
		name             string
		set              map[string]string
		wantW, wantT     int
		wantM            int
		wantDerivedNames string
	}{
		{"defaults", nil, DefaultWorkers, DefaultThreads, DefaultMaxConcurrentRequests, ""},
		// max_concurrent_requests is the budget and derives neither
		// workers nor threads (threads 0: no per-object cap)...
		{"max only", map[string]string{"max_concurrent_requests": "20"}, DefaultWorkers, 0, 20, ""},
		{"max and workers", map[string]string{"max_concurrent_requests": "64", "workers": "4"}, 4, 0, 64, ""},
		{"max and threads", map[string]string{"max_concurrent_requests": "64", "threads": "32"}, DefaultWorkers, 32, 64, ""},
		{"all three", map[string]string{"max_concurrent_requests": "10", "threads": "32", "workers": "40"}, 40, 32, 10, ""},
		// ...but workers left unset is at least the budget, so that many
		// small objects fill it.
		{"max above the default workers", map[string]string{"max_concurrent_requests": "1024"}, 1024, 0, 1024, "workers"},
		// workers or threads without max: workers x threads, as the
		// original s3pd and the presets count (threads unset counts 8).
		{"workers and threads", map[string]string{"threads": "32", "workers": "40"}, 40, 32, 1280, "max_concurrent_requests"},
		{"workers only", map[string]string{"workers": "10"}, 10, 0, 10 * BudgetThreads, "max_concurrent_requests"},
		{"threads only", map[string]string{"threads": "64"}, DefaultWorkers, 64, DefaultWorkers * 64, "max_concurrent_requests"},
		// 50 GiB/s over 90 MiB/s per connection: ceil(568.9) = 569.
		{"target", map[string]string{"target_bandwidth": "50GB/s"}, 569, 0, 569, "max_concurrent_requests,workers"},
		{"target crt", map[string]string{"target_bandwidth": "50GB/s", "preferred_transfer_client": "crt"}, 569, 0, 569, "max_concurrent_requests,workers"},
		{"target classic ignored", map[string]string{"target_bandwidth": "50GB/s", "preferred_transfer_client": "classic"}, DefaultWorkers, DefaultThreads, DefaultMaxConcurrentRequests, ""},
		{"target capped by max_bandwidth", map[string]string{"target_bandwidth": "50GB/s", "max_bandwidth": "900MB/s"}, DefaultWorkers, 0, 10, "max_concurrent_requests"},
		{"tiny target", map[string]string{"target_bandwidth": "1MB/s"}, DefaultWorkers, 0, 1, "max_concurrent_requests"},
		{"huge target bounded", map[string]string{"target_bandwidth": "1TB/s"}, MaxTunedConnections, 0, MaxTunedConnections, "max_concurrent_requests,workers"},
		{"target ignored when workers set", map[string]string{"target_bandwidth": "50GB/s", "workers": "4"}, 4, 0, 4 * BudgetThreads, "max_concurrent_requests"},
		{"target ignored when max set", map[string]string{"target_bandwidth": "50GB/s", "max_concurrent_requests": "16"}, DefaultWorkers, 0, 16, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Defaults()
			explicit := map[string]bool{}
			for k, v := range tt.set {
				if err := s.Set(k, v); err != nil {
					t.Fatalf("Set(%s, %s): %v", k, v, err)
				}
				explicit[k] = true
			}
			var names []string
			derived, _ := s.Derive(explicit)
			for _, d := range derived {
				names = append(names, d.Setting)
			}
			if s.Workers != tt.wantW || s.Threads != tt.wantT || s.MaxConcurrentRequests != tt.wantM {
				t.Errorf("got workers %d threads %d max %d, want %d %d %d", s.Workers, s.Threads, s.MaxConcurrentRequests, tt.wantW, tt.wantT, tt.wantM)
			}
			sortStrings(names)
			if got := strings.Join(names, ","); got != tt.wantDerivedNames {
				t.Errorf("derived %q, want %q", got, tt.wantDerivedNames)
			}
			if err := s.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func sortStrings(s []string) {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
}

func TestSetRejects(t *testing.T) {
	tests := []struct{ name, value, wantInErr string }{
		{"workers", "0", "between 1"},
		{"workers", "-3", "between 1"},
		{"workers", "many", "not an integer"},
		{"threads", "-1", "between 0"},
		{"max_concurrent_requests", "0", "between 1"},
		{"multipart_chunksize", "16XB", "invalid size"},
		{"multipart_chunksize", "0", "between"},
		{"multipart_chunksize", "6GB", "between"},
		{"multipart_threshold", "0", "between"},
		{"max_queue_size", "0", "between 1"},
		{"max_bandwidth", "fast", "invalid rate"},
		{"target_bandwidth", "50G", "invalid rate"},
		{"preferred_transfer_client", "turbo", "auto, crt, classic"},
		{"log_level", "loud", "debug, info, warn, error"},
		{"log_format", "xml", "console, json"},
		{"direct_io", "yes", "auto, on, off"},
		{"nics", "eth0,eth0", "twice"},
		{"nics", "a/b", "invalid interface"},
		{"endpoint_url", "localhost:9000", "http"},
		{"no_sign_request", "maybe", "true or false"},
		{"no_verify_ssl", "perhaps", "true or false"},
		{"region", "us west", "invalid region"},
		{"colour", "blue", "unknown setting"},
	}
	for _, tt := range tests {
		s := Defaults()
		err := s.Set(tt.name, tt.value)
		if err == nil || !strings.Contains(err.Error(), tt.wantInErr) {
			t.Errorf("Set(%s, %q) = %v, want an error containing %q", tt.name, tt.value, err, tt.wantInErr)
		}
		if s.Format(tt.name) != Defaults().Format(tt.name) {
			t.Errorf("Set(%s, %q) failed but changed the value to %q", tt.name, tt.value, s.Format(tt.name))
		}
	}
}

func TestSetAndFormatEverySetting(t *testing.T) {
	values := map[string]string{
		"workers": "40", "threads": "32", "max_concurrent_requests": "1280",
		"multipart_chunksize": "16MiB", "multipart_threshold": "64MiB", "max_queue_size": "10",
		"max_bandwidth": "1GiB/s", "target_bandwidth": "50GiB/s", "preferred_transfer_client": "classic",
		"nics": "eth0,eth1", "region": "us-west-2", "endpoint_url": "http://127.0.0.1:9000",
		"addressing_style": "virtual", "no_sign_request": "true", "ca_bundle": "/etc/ssl/corp.pem", "no_verify_ssl": "true", "log_level": "debug", "log_format": "json",
		"direct_io": "on",
	}
	s := Defaults()
	for _, name := range Names() {
		v, ok := values[name]
		if !ok {
			t.Fatalf("no test value for setting %s", name)
		}
		if err := s.Set(name, v); err != nil {
			t.Fatalf("Set(%s, %q): %v", name, v, err)
		}
		if got := s.Format(name); got != v {
			t.Errorf("Format(%s) = %q, want %q", name, got, v)
		}
		if s.Value(name) == nil {
			t.Errorf("Value(%s) = nil", name)
		}
	}
	want := Settings{Workers: 40, Threads: 32, MaxConcurrentRequests: 1280, PartSize: 16 << 20, MultipartThreshold: 64 << 20,
		MaxQueueSize: 10, MaxBandwidth: 1 << 30, TargetBandwidth: 50 << 30, PreferredTransferClient: "classic",
		NICs: []string{"eth0", "eth1"}, Region: "us-west-2", EndpointURL: "http://127.0.0.1:9000", NoSignRequest: true,
		LogLevel: "debug", LogFormat: "json"}
	if got := s; got.Workers != want.Workers || got.PartSize != want.PartSize || got.TargetBandwidth != want.TargetBandwidth ||
		strings.Join(got.NICs, ",") != "eth0,eth1" || got.EndpointURL != want.EndpointURL || !got.NoSignRequest || got.LogFormat != "json" {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestResolverErrorNamesSettingValueOrigin(t *testing.T) {
	r := NewResolver()
	or := Origin{Source: SourceEnv, Detail: "S3PD_MULTIPART_CHUNKSIZE"}
	err := r.Set("multipart_chunksize", "16XB", or)
	var se *SettingError
	if !errors.As(err, &se) {
		t.Fatalf("got %v, want a *SettingError", err)
	}
	for _, want := range []string{"multipart_chunksize", `"16XB"`, "env S3PD_MULTIPART_CHUNKSIZE"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

func TestResolverOrigins(t *testing.T) {
	r := NewResolver()
	file := Origin{Source: SourceFile, Detail: "/x.yaml"}
	flag := Origin{Source: SourceFlag, Detail: "--partsize"}
	if err := r.Set("multipart_chunksize", "4MB", file); err != nil {
		t.Fatal(err)
	}
	if err := r.Set("multipart_chunksize", "16MB", flag); err != nil {
		t.Fatal(err)
	}
	if err := r.Set("max_concurrent_requests", "1024", file); err != nil {
		t.Fatal(err)
	}
	s, o, err := r.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if s.PartSize != 16<<20 || o.Get("multipart_chunksize") != flag {
		t.Errorf("got part size %d from %v, want 16MiB from %v", s.PartSize, o.Get("multipart_chunksize"), flag)
	}
	if got := o.Get("workers"); got.Source != SourceDerived || got.Detail != "from max_concurrent_requests" {
		t.Errorf("workers origin = %v, want derived from max_concurrent_requests", got)
	}
	if got, want := o.Budget(), "1024 requests in flight: max_concurrent_requests (file /x.yaml)"; got != want {
		t.Errorf("budget %q, want %q", got, want)
	}
	if got := o.Get("log_level"); got.Source != SourceDefault {
		t.Errorf("log_level origin = %v, want default", got)
	}
	if got := o.Explicit(); len(got) != 2 || !got["multipart_chunksize"] || !got["max_concurrent_requests"] {
		t.Errorf("Explicit() = %v, want multipart_chunksize and max_concurrent_requests", got)
	}
}

// A setting from a higher-precedence source is never capped by a lower
// one; the derivation says what it replaced.
func TestDeriveRankedPrecedence(t *testing.T) {
	tests := []struct {
		name            string
		set             map[string]string
		rank            map[string]int
		wantW, wantT    int
		wantM           int
		wantOverrodeMCR string
		wantRule        string
		wantOverridden  string // the settings replaced, sorted
	}{
		{"flags over aws-config max", map[string]string{"max_concurrent_requests": "20", "workers": "40", "threads": "32"},
			map[string]int{"max_concurrent_requests": 1, "workers": 6, "threads": 6}, 40, 32, 1280, "20", BudgetFromWorkers, "max_concurrent_requests"},
		{"threads alone over a lower max", map[string]string{"max_concurrent_requests": "20", "threads": "32"},
			map[string]int{"max_concurrent_requests": 1, "threads": 6}, DefaultWorkers, 32, DefaultWorkers * 32, "20", BudgetFromWorkers, "max_concurrent_requests"},
		{"a preset's workers and threads: their product", map[string]string{"workers": "16", "threads": "8"},
			map[string]int{"workers": 2, "threads": 2}, 16, 8, 128, "", BudgetFromWorkers, ""},
		{"same source: max is the budget", map[string]string{"max_concurrent_requests": "20", "workers": "40", "threads": "32"},
			map[string]int{"max_concurrent_requests": 3, "workers": 3, "threads": 3}, 40, 32, 20, "", BudgetFromRequests, ""},
		{"a higher max drops a lower per-object cap", map[string]string{"max_concurrent_requests": "20", "workers": "40", "threads": "2"},
			map[string]int{"max_concurrent_requests": 6, "workers": 2, "threads": 2}, 40, 0, 20, "", BudgetFromRequests, "threads"},
		{"a higher max raises lower workers", map[string]string{"max_concurrent_requests": "100", "workers": "10"},
			map[string]int{"max_concurrent_requests": 6, "workers": 2}, 100, 0, 100, "", BudgetFromRequests, "workers"},
		{"target flag over aws-config max", map[string]string{"max_concurrent_requests": "20", "target_bandwidth": "50GB/s"},
			map[string]int{"max_concurrent_requests": 1, "target_bandwidth": 6}, 569, 0, 569, "20", BudgetFromBandwidth, "max_concurrent_requests"},
		{"target under a higher max ignored", map[string]string{"max_concurrent_requests": "20", "target_bandwidth": "50GB/s"},
			map[string]int{"max_concurrent_requests": 6, "target_bandwidth": 1}, DefaultWorkers, 0, 20, "", BudgetFromRequests, ""},
		{"nothing set", nil, nil, DefaultWorkers, 0, DefaultMaxConcurrentRequests, "", BudgetDefault, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Defaults()
			for k, v := range tt.set {
				if err := s.Set(k, v); err != nil {
					t.Fatal(err)
				}
			}
			var overrode string
			var overridden []string
			derived, rule := s.DeriveRanked(tt.rank)
			for _, d := range derived {
				if d.Setting == "max_concurrent_requests" {
					overrode = d.Overrode
				}
				if d.Overrode != "" {
					overridden = append(overridden, d.Setting)
				}
			}
			sortStrings(overridden)
			if rule != tt.wantRule || strings.Join(overridden, ",") != tt.wantOverridden {
				t.Errorf("rule %q, overridden %q; want %q, %q", rule, overridden, tt.wantRule, tt.wantOverridden)
			}
			if s.Workers != tt.wantW || s.Threads != tt.wantT || s.MaxConcurrentRequests != tt.wantM || overrode != tt.wantOverrodeMCR {
				t.Errorf("got workers %d threads %d max %d overrode %q, want %d %d %d %q",
					s.Workers, s.Threads, s.MaxConcurrentRequests, overrode, tt.wantW, tt.wantT, tt.wantM, tt.wantOverrodeMCR)
			}
		})
	}
}
