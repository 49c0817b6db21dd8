// Command fleetdiscover prints, as one JSON line, what fleet.Discover
// reads from its environment with the port given as its argument, or
// the error, for the tests that run it under a real scheduler.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"

	"github.com/s3pd/s3pd/pkg/fleet"
)

func main() {
	port, err := strconv.Atoi(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleetdiscover PORT:", err)
		os.Exit(2)
	}
	d, err := fleet.Discover(os.Getenv, port)
	out := struct {
		fleet.Discovered
		Err string `json:"err,omitempty"`
	}{Discovered: d}
	if err != nil {
		out.Err = err.Error()
	}
	json.NewEncoder(os.Stdout).Encode(out)
}
