// Command glmbench measures OpenAI-compatible LLM serving endpoints: how fast
// they serve, how correct their API is, how good the model behind them is,
// and whether any of that regressed.
package main

import (
	"os"

	"github.com/glmbench/glmbench/cmd/root"
)

func main() {
	os.Exit(root.Main())
}
