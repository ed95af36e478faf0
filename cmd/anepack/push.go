package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/anepack/anepack/internal/bytesize"
	"github.com/anepack/anepack/internal/cli"
	"github.com/anepack/anepack/remote"
)

// newPushCmd is `anepack push BUNDLE REF`: upload a bundle to an OCI registry or a Hugging
// Face repo.
func newPushCmd() *cobra.Command {
	var f remote.Flags
	cmd := &cobra.Command{
		Use:   "push BUNDLE REF",
		Short: "Upload a bundle to an OCI registry (oci://) or a Hugging Face repo (hf://)",
		Long: `push uploads a .aneb bundle so that anerun can pull it on other machines.

oci://registry/ns/name:tag stores it as an OCI artifact (artifactType ` + remote.ArtifactType + `)
in any v2 registry (Docker Hub, GHCR, Harbor, registry:2). The model summary becomes manifest
annotations. With --compress auto (the default) the bundle travels as independent zstd frames
when that saves more than 10%; anerun pull always installs the plain, mappable bundle.
Credentials come from ~/.docker/config.json (docker login) or --username with --password-stdin.

hf://org/repo[/path/in/repo.aneb] creates the repo if needed and commits the bundle through the
Hub's LFS upload API; the token comes from HF_TOKEN (or the token file of hf auth login).

The pushed reference, with its digest or commit, is printed on stdout.`,
		Example: `  anepack push qwen.aneb oci://ghcr.io/me/qwen:0.5b
  echo "$TOKEN" | anepack push qwen.aneb oci://localhost:5000/me/qwen:v1 --plain-http --username me --password-stdin
  HF_TOKEN=hf_... anepack push qwen.aneb hf://me/qwen-aneb`,
		Args: cli.Args(0, "BUNDLE", "REF"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := cli.SignalContext(cmd.Context())
			defer cancel()
			opts, err := f.Options(cmd.InOrStdin(), cli.Stderr(), remoteProgress)
			if err != nil {
				return err
			}
			p, err := remote.Push(ctx, args[0], args[1], opts)
			if err != nil {
				return err
			}
			if !f.Quiet {
				how := "plain"
				if p.Compressed {
					how = fmt.Sprintf("zstd frames, ratio %.3f", p.Compression.Ratio())
				}
				sent := "already there, nothing uploaded"
				if p.Uploaded > 0 {
					sent = fmt.Sprintf("%s uploaded (%s)", bytesize.Format(p.Uploaded), how)
				}
				fmt.Fprintf(cli.Stderr(), "pushed %s: %s, %s in %.1fs\n", args[0], p.BundleDigest, sent, p.Elapsed.Seconds())
			}
			out := p.Ref.String()
			if p.Commit != "" {
				r := p.Ref
				r.Revision = p.Commit
				out = r.String()
			}
			fmt.Fprintln(cmd.OutOrStdout(), out)
			return nil
		},
	}
	f.RegisterPush(cmd.Flags())
	return cmd
}
