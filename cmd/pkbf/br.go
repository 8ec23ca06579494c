package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/pkbf/pkbf/weakkeys"
)

// brFlags are the flags of the Baseline Requirements' weak-key checks
// (package weakkeys), the same in check and serve.
type brFlags struct {
	on                       bool
	debian, rsaSizes, curves string
	rounds                   int
}

func (fl *brFlags) register(c *command) {
	c.BoolVar(&fl.on, "br", false, "also check every key against the CA/B Forum Baseline Requirements' weak-key rules (6.1.1.3, 6.1.5, 6.1.6): Debian weak keys, ROCA, Fermat's method, small factors, RSA sizes and exponents, EC curves and points")
	c.StringVar(&fl.debian, "debian", "", "with --br: the Debian weak-key lists in `FILE` (pkbf weak build writes it); without it every RSA and EC key is reported as not checked for them")
	c.IntVar(&fl.rounds, "fermat-rounds", 100, "with --br: the rounds of Fermat's method, `N` from 100 (what the BR require) to 1048576")
	c.StringVar(&fl.rsaSizes, "rsa-sizes", "", "with --br: allow only the RSA sizes in `LIST`, bits separated by commas (2048,3072,4096); by default any size the BR allow")
	c.StringVar(&fl.curves, "curves", "", "with --br: allow only the curves in `LIST`, separated by commas (P-256,P-384); by default P-256, P-384 and P-521")
}

// checker returns the weak-key checker the flags ask for (nil without
// --br), and the function that closes its Debian file.
func (fl *brFlags) checker(c *command) (*weakkeys.Checker, func(), error) {
	done := func() {}
	var with []string
	c.Visit(func(f *flag.Flag) {
		if n := c.longName(f.Name); n == "debian" || n == "fermat-rounds" || n == "rsa-sizes" || n == "curves" {
			with = append(with, "--"+n)
		}
	})
	switch {
	case !fl.on && len(with) > 0:
		return nil, done, fmt.Errorf("%s %s with --br", strings.Join(with, ", "), map[bool]string{true: "goes", false: "go"}[len(with) == 1])
	case !fl.on:
		return nil, done, nil
	case fl.rounds < 100:
		return nil, done, fmt.Errorf("--fermat-rounds %d: BR 6.1.1.3 requires at least 100 rounds", fl.rounds)
	}
	opts := []weakkeys.Option{weakkeys.WithFermatRounds(fl.rounds)}
	if fl.rsaSizes != "" {
		var sizes []int
		for _, s := range strings.Split(fl.rsaSizes, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil {
				return nil, done, fmt.Errorf("--rsa-sizes %q: %q is not a number of bits", fl.rsaSizes, s)
			}
			sizes = append(sizes, n)
		}
		opts = append(opts, weakkeys.WithRSASizes(sizes...))
	}
	if fl.curves != "" {
		opts = append(opts, weakkeys.WithCurves(strings.Split(strings.ReplaceAll(fl.curves, " ", ""), ",")...))
	}
	if fl.debian != "" {
		d, err := weakkeys.OpenDebian(fl.debian)
		if err != nil {
			return nil, done, err
		}
		opts, done = append(opts, weakkeys.WithDebian(d)), func() { d.Close() }
	}
	w, err := weakkeys.New(opts...)
	if err != nil {
		done()
		return nil, func() {}, err
	}
	return w, done, nil
}
