package cmd

import "github.com/spf13/cobra"

// examples are the --help examples of commands that do not set their
// own, by command path.
var examples = map[string]string{
	"s3pd": `  s3pd get s3://my-bucket/models/llama/ /data/llama
  s3pd cp ./out s3://my-bucket/results/
  s3pd --workers=40 --threads=32 s3://my-bucket/2GiB/ /mnt/ram-disk   # the original s3pd's form
  s3pd completion bash > ~/.local/share/bash-completion/completions/s3pd`,
	"s3pd get": `  s3pd get s3://my-bucket/models/llama/ /data/llama
  s3pd get 's3://my-bucket/models/*.safetensors' /data/weights
  s3pd get --nics eth0,eth1 --partsize 16MiB s3://my-bucket/dataset/ /striped
  s3pd get --delete --dry-run s3://my-bucket/dataset/ /data/dataset
  s3pd get s3://my-bucket/x.tar - | tar x
  s3pd get --json --json-file run.jsonl s3://my-bucket/data/ ./data`,
	"s3pd copy": `  s3pd copy ./checkpoints s3://my-bucket/checkpoints/
  s3pd copy --content-type application/json --metadata run=42 ./out.json s3://my-bucket/out.json
  s3pd copy --delete s3://my-bucket/a/ s3://my-bucket/b/
  s3pd copy --source-profile prod s3://prod-bucket/x/ s3://dev-bucket/x/
  s3pd cp --no-follow-symlinks /data/tree /backup/tree`,
	"s3pd bench": `  s3pd bench
  s3pd bench --dataset big:4:1GiB --conn-rate 0 --json
  s3pd bench --nics eth0,eth1 s3://my-bucket/models/
  s3pd bench --report run.html --interval 500ms s3://my-bucket/models/
  s3pd bench --sweep --save-preset lab s3://my-bucket/sample/   # then: s3pd get --preset lab ...`,
	"s3pd bench serve": `  s3pd bench serve --listen 127.0.0.1:9000 --dataset model:4:64MiB
  s3pd bench serve --backend memory --bucket uploads --faults faults.txt`,
	"s3pd bench compare": `  s3pd bench --repeat 5 --json > before.json
  s3pd bench --repeat 5 --json > after.json
  s3pd bench compare --fail-on-regression before.json after.json`,
	"s3pd bench disk": `  s3pd bench disk /striped
  s3pd bench disk --files 8 --file-size 1GiB --network-rate 12.5GB --json /data`,
	"s3pd nics": `  s3pd nics
  s3pd nics --json`,
	"s3pd config": `  s3pd config show
  s3pd config show --preset m6in.32xlarge --partsize 32MB`,
	"s3pd config show": `  s3pd config show
  s3pd config show --profile prod --json`,
	"s3pd shards": `  s3pd get --shard 0/4 --json s3://my-bucket/data/ /data > shard0.jsonl
  s3pd shards check shard*.jsonl`,
	"s3pd shards check": `  s3pd shards check shard0.jsonl shard1.jsonl shard2.jsonl shard3.jsonl`,
}

// addExamples gives every command in root's tree that has none its
// example from examples.
func addExamples(root *cobra.Command) {
	if ex, ok := examples[root.CommandPath()]; ok && root.Example == "" {
		root.Example = ex
	}
	for _, c := range root.Commands() {
		addExamples(c)
	}
}
