// Command vembed embeds text, images and interleaved documents with
// vision-language models stored as GGUF, and serves them over HTTP.
//
// Usage:
//
//	vembed <command> [flags] [args]
//
// Run "vembed help" for the list of commands.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
)

// command is one subcommand of the vembed binary. Each lives in its own file
// and registers itself from an init function, so adding a command never
// touches this file.
type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

var commands = map[string]*command{}

func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("vembed: duplicate command " + c.name)
	}
	commands[c.name] = c
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "vembed: embeddings from vision-language GGUF models")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: vembed <command> [flags] [args]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Run "vembed <command> -h" for the flags of a command.`)
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "vembed: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	if err := c.run(args[1:], stdout, stderr); err != nil {
		if err == errUsage {
			return 2
		}
		fmt.Fprintf(stderr, "vembed %s: %v\n", c.name, err)
		return 1
	}
	return 0
}

// errUsage is returned by a command whose flags were wrong; the flag package
// has already printed the message.
var errUsage = fmt.Errorf("usage")
