// Package model is `glmbench model`: synthetic checkpoints of the reference engine.
package model

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/glmbench/glmbench/cmd/cmdutil"
	engine "github.com/glmbench/glmbench/engine/model"
	"github.com/glmbench/glmbench/internal/badinput"
)

// SynthOptions are `model synth`'s flags.
type SynthOptions struct {
	F      *cmdutil.Factory
	Preset string
	Out    string
	Seed   uint64
}

// NewCmdModel returns `glmbench model` with its subcommands.
func NewCmdModel(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "model <command>",
		Short: "Make checkpoints of the reference engine",
	}
	cmd.AddCommand(NewCmdSynth(f, nil))
	return cmd
}

// NewCmdSynth binds `model synth`. runF replaces the run function in tests.
func NewCmdSynth(f *cmdutil.Factory, runF func(*SynthOptions) error) *cobra.Command {
	o := &SynthOptions{F: f}
	cmd := &cobra.Command{
		Use:   "synth --preset P --out DIR",
		Short: "Write a deterministic synthetic checkpoint (config.json + model.safetensors)",
		Long: `Synth writes a GLM-5-architecture (glm_moe_dsa) checkpoint with random weights
drawn from --seed: the same preset and seed always give the same bytes.
Presets: nano (the built-in engine's default), tiny (about 27 M parameters) and gpu
(about 480 M parameters, 1.9 GB in float32, for --device cuda).`,
		Args: cmdutil.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if runF != nil {
				return runF(o)
			}
			return Synth(o)
		},
	}
	cmd.Flags().StringVar(&o.Preset, "preset", "nano", "model preset: nano, tiny or gpu")
	cmd.Flags().StringVar(&o.Out, "out", "", "folder to write the checkpoint into (required)")
	cmd.Flags().Uint64Var(&o.Seed, "seed", 1, "seed of the random weights")
	return cmd
}

// Synth writes the checkpoint.
func Synth(o *SynthOptions) error {
	if o.Out == "" {
		return badinput.Errorf("model synth needs --out DIR")
	}
	cfg, err := engine.Preset(o.Preset)
	if err != nil {
		return badinput.Errorf("--preset: %v", err)
	}
	w := engine.Synth(cfg, o.Seed)
	if err := engine.Save(o.Out, cfg, w); err != nil {
		return err
	}
	n := 0
	for _, s := range engine.Manifest(cfg) {
		n += engine.Numel(s.Shape)
	}
	_, err = fmt.Fprintf(o.F.IO.Out, "wrote %s: preset %s, seed %d, %d tensors, %.2f M parameters\n", o.Out, o.Preset, o.Seed, len(engine.Manifest(cfg)), float64(n)/1e6)
	return err
}
