// Command report turns the runs of bench/scenarios/bed.sh into the tables
// of bench/RESULTS.md.
//
//	go run ./bench/scenarios/report -dir .bed/scenarios/STAMP [-update bench/RESULTS.md]
//
// It reads DIR/runs.jsonl, DIR/host.txt and DIR/guest.txt. Without -update
// it prints the tables (markdown) on stdout; with -update it replaces the
// part of FILE between BeginMarker and EndMarker with them, and fails,
// leaving FILE alone, when the markers are missing.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	dir := flag.String("dir", "", "folder of one run of bench/scenarios/run (holds runs.jsonl)")
	update := flag.String("update", "", "rewrite the generated section of this markdown file")
	flag.Parse()
	if *dir == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: report -dir DIR [-update FILE]")
		os.Exit(2)
	}
	if err := run(*dir, *update); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func run(dir, update string) error {
	f, err := os.Open(filepath.Join(dir, "runs.jsonl"))
	if err != nil {
		return err
	}
	runs, err := ParseRuns(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("runs.jsonl: %w", err)
	}
	if len(runs) == 0 {
		return fmt.Errorf("%s/runs.jsonl holds no runs", dir)
	}
	var m Meta
	for _, name := range []string{"host.txt", "guest.txt"} {
		mf, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		err = ParseMeta(&m, mf)
		mf.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	var gen bytes.Buffer
	Render(&gen, &m, runs)
	if update == "" {
		_, err := os.Stdout.Write(gen.Bytes())
		return err
	}
	doc, err := os.ReadFile(update)
	if err != nil {
		return err
	}
	out, err := Splice(string(doc), gen.String())
	if err != nil {
		return fmt.Errorf("%s: %w", update, err)
	}
	return os.WriteFile(update, []byte(out), 0o644)
}
