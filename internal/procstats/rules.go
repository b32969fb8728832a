package procstats

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
)

// IncludeRule selects processes to read besides the announced ones. A process matches the rule
// when every matcher set in it matches; it is read when it matches any rule.
type IncludeRule struct {
	// Executable matches, exactly, either the file name of the process's executable (the base
	// name of /proc/<pid>/exe, e.g. "python3.12") or the process name (e.g. "python3").
	Executable string `mapstructure:"executable"`
	// CommandLine is a regular expression (Go RE2 syntax) searched for in the command line, its
	// arguments joined by single spaces; anchor it with ^ and $ to match the whole line.
	CommandLine string `mapstructure:"command_line"`
}

// Validate checks that the rule has a matcher and that its regular expression compiles.
func (r IncludeRule) Validate() error {
	if r.Executable == "" && r.CommandLine == "" {
		return errors.New("an include rule needs executable or command_line")
	}
	if r.CommandLine != "" {
		if _, err := regexp.Compile(r.CommandLine); err != nil {
			return fmt.Errorf("command_line: %w", err)
		}
	}
	return nil
}

type rule struct {
	executable string
	cmdline    *regexp.Regexp
}

func compileRules(rules []IncludeRule) ([]rule, error) {
	out := make([]rule, 0, len(rules))
	var errs []error
	for i, r := range rules {
		if err := r.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("include[%d]: %w", i, err))
			continue
		}
		c := rule{executable: r.Executable}
		if r.CommandLine != "" {
			c.cmdline = regexp.MustCompile(r.CommandLine)
		}
		out = append(out, c)
	}
	return out, errors.Join(errs...)
}

// names holds what identifies a process incarnation to people and to include rules. Fields are
// read lazily and at most once per incarnation.
type names struct {
	p Process

	nameRead bool
	name     string // process name (comm)

	exeRead bool
	exeBase string // base name of the executable, "" when unreadable

	cmdRead bool
	cmdline string
}

func (n *names) procName(ctx context.Context) (string, error) {
	if !n.nameRead {
		name, err := n.p.Name(ctx)
		if err != nil {
			return "", err // not kept: the next scrape tries again
		}
		n.nameRead, n.name = true, name
	}
	return n.name, nil
}

// exeName is the base name of the executable; failures (kernel threads have none, other users'
// processes refuse it) leave it empty and are not errors.
func (n *names) exeName(ctx context.Context) string {
	if !n.exeRead {
		n.exeRead = true
		if exe, err := n.p.Exe(ctx); err == nil && exe != "" {
			// Linux marks an executable replaced or removed since exec.
			exe = strings.TrimSuffix(exe, " (deleted)")
			n.exeBase = filepath.Base(exe)
		}
	}
	return n.exeBase
}

func (n *names) commandLine(ctx context.Context) (string, error) {
	if !n.cmdRead {
		cmd, err := n.p.Cmdline(ctx)
		if err != nil {
			return "", err
		}
		n.cmdRead, n.cmdline = true, cmd
	}
	return n.cmdline, nil
}

// executableName is process.executable.name as the OpenTelemetry conventions define it: the
// base name of the executable, else the process name.
func (n *names) executableName(ctx context.Context) (string, error) {
	if exe := n.exeName(ctx); exe != "" {
		return exe, nil
	}
	return n.procName(ctx)
}

// matches reports whether the process matches any rule. When none does, err is the first read
// error that left a rule undecided, and op what was being read.
func (n *names) matches(ctx context.Context, rules []rule) (ok bool, op string, err error) {
	for i := range rules {
		matched, rop, rerr := n.matchRule(ctx, &rules[i])
		if matched {
			return true, "", nil
		}
		if rerr != nil && err == nil {
			op, err = rop, rerr
		}
	}
	return false, op, err
}

func (n *names) matchRule(ctx context.Context, r *rule) (bool, string, error) {
	if r.executable != "" {
		name, err := n.procName(ctx)
		if name != r.executable && n.exeName(ctx) != r.executable {
			return false, OpName, err
		}
	}
	if r.cmdline != nil {
		cmd, err := n.commandLine(ctx)
		if err != nil {
			return false, OpCmdline, err
		}
		if !r.cmdline.MatchString(cmd) {
			return false, "", nil
		}
	}
	return true, "", nil
}
