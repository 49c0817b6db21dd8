package cmd

import (
	"context"
	"reflect"
	"testing"

	"github.com/spf13/pflag"
)

// TestOutputFlagsAreFlagsOnly: every field of outputFlags (and of its
// reportFlags) is set by one of get's flags, so what a run learns goes
// into runOutput, not into the flags a command was given.
func TestOutputFlagsAreFlagsOnly(t *testing.T) {
	var got *getOptions
	c := NewCmdGet(optionsFactory(), func(_ context.Context, o *getOptions) error { got = o; return nil })
	values := map[string]string{"bool": "true", "int": "3", "duration": "7s", "string": "x"}
	c.Flags().VisitAll(func(fl *pflag.Flag) {
		v, ok := values[fl.Value.Type()]
		if !ok {
			return // the settings' own types: not output flags
		}
		if err := c.Flags().Set(fl.Name, v); err != nil {
			t.Fatalf("--%s %s: %v", fl.Name, v, err)
		}
	})
	if err := parse(t, c, "s3://b/k", "out"); err != nil {
		t.Fatal(err)
	}
	check := func(v reflect.Value) {
		for i := range v.NumField() {
			if f := v.Field(i); f.Kind() != reflect.Struct && f.IsZero() {
				t.Errorf("%s.%s is set by no flag: what a run learns belongs in runOutput", v.Type().Name(), v.Type().Field(i).Name)
			}
		}
	}
	check(reflect.ValueOf(got.output))
	check(reflect.ValueOf(got.output.report))
}
