package cmd

import (
	"cmp"
	"context"

	"github.com/s3pd/s3pd/pkg/config"
	"github.com/s3pd/s3pd/pkg/s3store"
	"github.com/s3pd/s3pd/pkg/store"
)

// sideFlags are the settings that say where one side of a copy is and
// how it is reached. With --source-profile, their flags (--endpoint-url,
// --region, ...) are DEST's, and SRC's come from its profile and from
// --source-endpoint-url and --source-region.
var sideFlags = []string{"endpoint_url", "region", "addressing_style", "ca_bundle"}

// sourceStores are the stores of a copy as o has them, SRC's S3 reached
// over DEST's client unless the --source-* flags name another store
// (crossStore), which sourceSide reaches.
func sourceStores(ctx context.Context, f *runEnv, opts *copyOptions, ds config.Settings, o storeOptions) (_ store.Registry, crossStore bool, _ error) {
	if !opts.crossStore() {
		return stores(o), false, nil
	}
	so, err := sourceSide(ctx, f, opts, ds, o.s3Dest.Client)
	if err != nil {
		return nil, true, err
	}
	o.s3.Client = *so
	return stores(o), true, nil
}

// sourceSide is how an S3 to S3 copy across stores reaches SRC, from
// the --source-* flags. dest is how it reaches DEST, from the run's
// settings ds.
//
// --source-profile makes the profile a whole side: its endpoint_url,
// region, credentials, ca_bundle and s3 section (addressing_style), and
// the s3pd config file's entry for it, apply to SRC, as --profile's
// apply to DEST. The environment (AWS_ENDPOINT_URL, AWS_REGION, ...)
// applies to both, as it does to any profile of the AWS CLI. Without
// --source-profile, SRC is reached as DEST is, but for the endpoint and
// region the flags name.
func sourceSide(ctx context.Context, f *runEnv, opts *copyOptions, ds config.Settings, dest s3store.ClientOptions) (*s3store.ClientOptions, error) {
	so, src := dest, opts.source
	if src.profile != "" {
		s, err := sourceSettings(f, opts, src.profile)
		if err != nil {
			return nil, err
		}
		so.EndpointURL, so.Region, so.AddressingStyle, so.Profile = s.EndpointURL, s.Region, s.AddressingStyle, src.profile
		so.NoSignRequest = s.NoSignRequest
		if so.Transport == nil || s.CABundle != ds.CABundle || s.NoVerifySSL != ds.NoVerifySSL {
			// SRC's own certificates: a transport of its own, over the
			// same cards, counting into the run's handshakes.
			t, err := newTransport(ctx, f, s)
			if err != nil {
				return nil, err
			}
			so.Transport = t
		}
	}
	so.EndpointURL = cmp.Or(src.endpoint, so.EndpointURL)
	so.Region = cmp.Or(src.region, so.Region)
	return &so, nil
}

// sourceSettings loads the settings as seen from the source profile:
// the same precedence as the run's own, with profile in place of
// --profile and AWS_PROFILE, and without DEST's side flags.
func sourceSettings(f *runEnv, opts *copyOptions, profile string) (config.Settings, error) {
	getenv := f.getenv()
	l, err := config.Load(config.Sources{
		Getenv:        getenv,
		Flags:         opts.flags,
		Preset:        func(name string) ([]byte, error) { return readPreset(getenv, name) },
		KnownEnv:      knownEnv(),
		Profile:       profile,
		ProfileOrigin: config.Origin{Source: config.SourceFlag, Detail: "--source-profile"},
		SkipFlags:     sideFlags,
	})
	if err != nil {
		return config.Settings{}, usageError(err)
	}
	return l.Settings, nil
}
