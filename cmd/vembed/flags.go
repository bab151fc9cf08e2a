package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// newFlags returns a flag set for a subcommand that prints its errors and
// usage to stderr.
func newFlags(name, usageLine string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("vembed "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		io.WriteString(stderr, "Usage: vembed "+name+" "+usageLine+"\n\nFlags:\n")
		fs.PrintDefaults()
	}
	return fs
}

// usageError prints what is wrong with a command line, then the
// command's usage, and returns errUsage.
func usageError(fs *flag.FlagSet, stderr io.Writer, format string, args ...any) error {
	fmt.Fprintf(stderr, "%s: %s\n\n", fs.Name(), fmt.Sprintf(format, args...))
	fs.Usage()
	return errUsage
}

// parseFlags parses args allowing flags and positional arguments in any
// order ("vembed inspect FILE --tensor X" and "vembed inspect --tensor X
// FILE" mean the same); "--" ends flag parsing. It returns the positional
// arguments, or errUsage after the flag package has printed the problem.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, errUsage
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// fs.Parse stops at the first positional argument; keep it and go on,
		// unless the caller used "--" to mark the end of the flags.
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
		if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
			continue
		}
	}
}
