// Command oamflow is the oamflow CLI: apply and inspect Applications, author
// definitions, render offline, and run local control planes.
package main

import (
	"os"

	"github.com/oamflow/oamflow/pkg/cli"
)

func main() { os.Exit(cli.Execute(os.Args[1:])) }
