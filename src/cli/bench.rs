//! `deltalogic bench`: prefill and decode throughput of the transformer in each numerics mode,
//! next to llama.cpp's `llama-bench` on the same file measured in the same run, and peak memory
//! against the model file plus the KV cache. A benchmark, not a test: it prints numbers and
//! checks nothing.
//!
//! Each figure is also given as a share of this machine's limit, ours and llama.cpp's: prefill in
//! the integer mode against the integer kernels' multiply-add peak (their inner step in a loop,
//! `qmatmul::peak_macs`, once per run), decode against a streaming read of memory (every weight
//! is read once per generated token). This machine's read rate moves from minute to minute (on
//! the 2-core VM of issue 28, between about 30 and 65 GB/s), so a rate measured once per run
//! gave decode shares above 1. The read is measured beside each decode instead, just before and
//! just after it (ours in the child around its decode loop, llama-bench's around its `tg` run),
//! and each side's share is against the mean of its two. Only the weight matrices' work counts:
//! attention and the rest are the gap between a share and 1, with the kernels' own overhead.
//!
//! Each (model, backend) runs in a child process so that its peak RSS (VmHWM) is its own.
//! Decode is what greedy generation runs: from a one-token state, the chosen token through the
//! blocks and the LM head (`extend_each`, the runner's step), step after step, as llama-bench's
//! `tg` decodes from an empty cache. The state is moved into each step, so a recurrent layer's
//! state is advanced in place, as in generation, not copied. The
//! second decode figure is what the runner does with a run's generations: `--parallel` of them
//! stepped together, each after its own one-token prompt,
//! beside llama-batched-bench decoding as many sequences together (`-npp 1 -npl`). A step of
//! several reads the weights once for all of them, so it is a short prefill, and its share is
//! of the multiply-add peak.
//!
//! The generation figures (`--generate` prompts of CLoMo and of DeduCE) are what the runner's
//! generations cost: greedy decoding after each benchmark prompt through `eval::generate::Lockstep`,
//! plain and speculative, each prompt alone and all together, with the drafts' acceptance rate
//! and the tokens taken per pass. Beside them, llama.cpp's plain decode is llama-bench's tg.
//!
//! On a model with recurrent layers (Qwen3.5), the prefix tree's recurrent snapshots: one
//! snapshot's bytes, and the most kept at once, within `--snapshot-budget`, with the tokens
//! replayed, when the tree runs the `--generate` prompts of CLoMo and DeduCE.
//!
//! The tree's gain (issue 44, `--tree-from`): the scores a `score` run stored (the main job's set,
//! say) computed again through the prefix tree and straight, each prompt prefilled from the
//! empty state and its labels scored after it: forward tokens and seconds each way. Both ways
//! must give every stored score's bits, or the benchmark fails.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Barrier;
use std::time::Instant;

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};

use crate::benchmarks::clomo::build::read_split;
use crate::benchmarks::clomo::prompts::Setting;
use crate::benchmarks::deduce::{self, synthetic};
use crate::benchmarks::Decoding;
use crate::eval::generate::{Drafts, Generated, Lockstep};
use crate::eval::models::Loaded;
use crate::eval::tree;
use crate::eval::{Generation, Prefill as _, PromptRecord, ScoreRecord, Scoring as _};
use crate::model::block::transformer::State;
use crate::model::numerics::qmatmul;
use crate::model::scorer::{Backend, Scorer};
use crate::store::{Id, Store};

/// Where `scripts/llamacpp.sh` builds llama-bench, relative to the repository root.
const LLAMA_BENCH: &str = ".tools/llama.cpp-build/bin/llama-bench";

#[derive(Clone, Debug, clap::Args)]
pub struct BenchArgs {
    /// Model files or directories to measure.
    #[arg(long = "model", required = true)]
    pub models: Vec<PathBuf>,
    /// Prompt lengths in tokens, each timed as one prefill from the empty state.
    #[arg(long, value_delimiter = ',', default_values_t = [256, 1024], value_parser = super::bounds::count(1, super::bounds::MAX_TOKENS))]
    pub tokens: Vec<usize>,
    /// Tokens generated one at a time after a one-token prompt (the decode figure).
    #[arg(long, default_value_t = 64, value_parser = super::bounds::count(1, super::bounds::MAX_TOKENS))]
    pub decode: usize,
    /// Generations stepped together for the second decode figure, each after its own one-token
    /// prompt (what the runner's lockstep does with a run's generations).
    #[arg(long, default_value_t = crate::eval::LOCKSTEP, value_parser = super::bounds::count(1, 256))]
    pub parallel: usize,
    /// Prompts of CLoMo (rewriting, in ChatML) and of DeduCE (a synthetic chain continued) each
    /// generated greedily with and without speculative decoding (0: none).
    #[arg(long, default_value_t = 4, value_parser = super::bounds::count(0, 64))]
    pub generate: usize,
    /// Tokens at most of each of those generations.
    #[arg(long, default_value_t = 128, value_parser = super::bounds::count(1, super::bounds::MAX_TOKENS))]
    pub generate_tokens: usize,
    #[command(flatten)]
    pub compute: super::Compute,
    /// Timed repetitions of each figure after one short warm-up, ours and llama-bench's; the
    /// best of each side is reported.
    #[arg(long, default_value_t = 3, value_parser = super::bounds::count(1, super::bounds::MAX_REPS))]
    pub reps: usize,
    /// llama.cpp's llama-bench, for the side-by-side figures (default: the build of
    /// scripts/llamacpp.sh under the current directory, when present).
    #[arg(long)]
    pub llama_bench: Option<PathBuf>,
    /// The numerics modes to measure (repeat for several). A 4B model's f32 mode needs 16 GB, so
    /// the largest files are measured with `--backend int8` alone.
    #[arg(long = "backend", value_enum, default_values_t = [Backend::Flex, Backend::Int8])]
    pub backends: Vec<Backend>,
    /// A store where `score` scored a set with this model in each `--backend`'s mode (the main
    /// job's set, for one): its scores computed again through the prefix tree and
    /// straight (each prompt prefilled from the empty state), forward tokens and seconds each
    /// way. Both must give the stored bits.
    #[arg(long, value_name = "STORE")]
    pub tree_from: Option<PathBuf>,
    /// Measure one backend in this process and print one JSON line (used by the driver).
    #[arg(long, value_enum)]
    pub only: Option<Backend>,
}

/// Plain English, repeated until the prompt is long enough.
const TEXT: &str =
    "All people who regularly drink coffee are dependent on caffeine. People either \
    regularly drink coffee or joke about being addicted to caffeine. No one who jokes about being \
    addicted to caffeine is unaware that caffeine is a drug. Rina is either a student and unaware \
    that caffeine is a drug, or neither a student nor unaware that caffeine is a drug. ";

pub fn bench(args: &BenchArgs, json: bool) -> anyhow::Result<()> {
    if args.tokens.is_empty() || args.tokens.contains(&0) || args.decode == 0 || args.reps == 0 {
        bail!("--tokens, --decode and --reps must be positive");
    }
    match args.only {
        Some(backend) => {
            let model = args.models.first().context("--only needs one --model")?;
            let r = measure(model, backend, args)?;
            println!("{}", serde_json::to_string(&r)?);
            Ok(())
        }
        None => drive(args, json),
    }
}

/// One (model, backend) measured in a child process.
#[derive(Serialize, Deserialize)]
struct Measurement {
    /// Prefill tokens/s per prompt length, in `--tokens` order.
    prefill_tok_s: Vec<f64>,
    decode_tok_s: f64,
    /// Tokens/s of all `--parallel` generations together.
    parallel_decode_tok_s: f64,
    load_s: f64,
    peak_rss_mib: f64,
    /// The KV cache of the longest run (prompt or decode), f32 keys and values.
    kv_mib: f64,
    /// The peak resident set of the parallel decode, measured from the end of the rest, and the
    /// KV cache of its generations.
    parallel_peak_rss_mib: f64,
    parallel_kv_mib: f64,
    /// Multiply-adds of the weight matrices per prefill token.
    macs_per_token: f64,
    /// Bytes of weights read per decode step.
    decode_bytes: f64,
    /// The streaming read measured around the decode.
    decode_read: Read,
    /// Generation on the benchmarks' prompts, plain and speculative.
    generation: Vec<Generating>,
    /// A mixture of experts (issue 45): the experts chosen over the whole run and all of them,
    /// as stored (0 and 0 for a dense model).
    experts_chosen_mib: f64,
    experts_mib: f64,
    /// The prefix tree's recurrent snapshots, on a model with recurrent layers.
    snapshots: Option<Snapshots>,
    /// `--tree-from`'s scores through the tree and straight.
    tree: Option<TreeGain>,
}

/// A stored set's scores computed through the prefix tree and straight, each prompt from the
/// empty state (the same bits both ways, checked).
#[derive(Serialize, Deserialize)]
struct TreeGain {
    prompts: usize,
    scores: usize,
    /// Tokens through the model: the tree's (replays included) and the straight runs'.
    tree_tokens: u64,
    tree_s: f64,
    straight_tokens: u64,
    straight_s: f64,
}

/// The recurrent snapshots the prefix tree kept running the benchmarks' prompts.
#[derive(Serialize, Deserialize)]
struct Snapshots {
    prompts: usize,
    /// One state's recurrent layers, MiB.
    each_mib: f64,
    /// The most kept at once, and the budget, MiB.
    peak_mib: f64,
    budget_mib: f64,
    tree_tokens: u64,
    replayed_tokens: u64,
}

/// Greedy generation on one benchmark's prompts with and without speculative decoding, one
/// prompt at a time and all of them stepped together.
#[derive(Serialize, Deserialize)]
struct Generating {
    benchmark: String,
    prompts: usize,
    /// Tokens generated, all prompts together (the same both ways, checked).
    tokens: u64,
    plain_tok_s: f64,
    speculative_tok_s: f64,
    /// The same with every prompt in one lockstep.
    together_plain_tok_s: f64,
    together_speculative_tok_s: f64,
    /// Drafted tokens accepted over those drafted, and tokens taken per pass of the model,
    /// one prompt at a time.
    acceptance: f64,
    tokens_per_pass: f64,
}

fn measure(model: &Path, backend: Backend, args: &BenchArgs) -> anyhow::Result<Measurement> {
    let t0 = Instant::now();
    let scorer = Scorer::open(model, backend)?;
    let load_s = t0.elapsed().as_secs_f64();
    let longest = args.tokens.iter().copied().max().unwrap_or(1);
    let mut text = String::new();
    let tokens = loop {
        text.push_str(TEXT);
        let t = scorer.tokenize(&text)?;
        if t.len() >= longest {
            break t;
        }
    };
    let empty = scorer.empty_state();
    // Warm-up: first touches of the weights and the thread pool's start are not throughput.
    scorer.prefill(&empty, &tokens[..longest.min(32)])?;
    let best_of = |run: &mut dyn FnMut() -> anyhow::Result<()>| -> anyhow::Result<f64> {
        let mut best = f64::INFINITY;
        for _ in 0..args.reps {
            let t = Instant::now();
            run()?;
            best = best.min(t.elapsed().as_secs_f64());
        }
        Ok(best)
    };
    let mut prefill_tok_s = Vec::new();
    for &n in &args.tokens {
        let s = best_of(&mut || {
            scorer.prefill(&empty, &tokens[..n])?;
            Ok(())
        })?;
        prefill_tok_s.push(n as f64 / s);
    }
    let start = scorer.prefill(&empty, &tokens[..1])?;
    // The read's buffer is not the model's memory: the peak so far is kept, and the peak is
    // measured again from after the read (its buffer is above the mmap threshold, so freeing
    // it hands it back).
    let prefill_peak = peak_rss_kib()?;
    let first = argmax(&scorer.next_logits(&start)?);
    let before = read_bandwidth(args.compute.threads);
    reset_peak_rss()?;
    let s = best_of(&mut || decode_steps(&scorer, vec![start.clone()], vec![first], args.decode))?;
    let peak_rss_mib = prefill_peak.max(peak_rss_kib()?) / 1024.0;
    let decode_read = Read {
        before,
        after: read_bandwidth(args.compute.threads),
    };
    let cfg = scorer.model().config();
    let kv_per_position = cfg.layers * 2 * cfg.kv_heads * cfg.head_dim * 4;
    reset_peak_rss()?;
    // Different one-token prompts, as llama-batched-bench's sequences have (not shared).
    let starts = (0..args.parallel)
        .map(|i| scorer.prefill(&empty, &tokens[i % tokens.len()..][..1]))
        .collect::<Result<Vec<_>, _>>()?;
    let firsts = scorer
        .next_logits_each(&starts.iter().collect::<Vec<_>>())?
        .iter()
        .map(|l| argmax(l))
        .collect::<Vec<_>>();
    let parallel =
        best_of(&mut || decode_steps(&scorer, starts.clone(), firsts.clone(), args.decode))?;
    let positions = longest.max(args.decode + 1);
    let cost = scorer.model().weight_cost();
    let (experts_chosen, experts) = scorer.model().experts_bytes();
    let kv_mib = mib((positions * kv_per_position) as u64);
    let each = start.recurrent_bytes() as u64;
    let model = Loaded::new(scorer, backend);
    let generation = generation_prompts(args.generate, args.generate_tokens)?
        .into_iter()
        .map(|(benchmark, prompts)| generating(&model, benchmark, &prompts, args))
        .collect::<anyhow::Result<_>>()?;
    let snapshots = match (each, args.generate) {
        (0, _) | (_, 0) => None,
        _ => Some(snapshots(&model, each, args)?),
    };
    let tree = match &args.tree_from {
        Some(store) => Some(
            tree_gain(&model, store, args)
                .with_context(|| format!("--tree-from {}", store.display()))?,
        ),
        None => None,
    };
    Ok(Measurement {
        generation,
        snapshots,
        tree,
        macs_per_token: cost.macs_per_token as f64,
        decode_bytes: cost.decode_bytes as f64,
        decode_read,
        prefill_tok_s,
        decode_tok_s: args.decode as f64 / s,
        parallel_decode_tok_s: (args.parallel * args.decode) as f64 / parallel,
        load_s,
        peak_rss_mib,
        kv_mib,
        parallel_peak_rss_mib: peak_rss_kib()? / 1024.0,
        parallel_kv_mib: mib((args.parallel * (args.decode + 1) * kv_per_position) as u64),
        experts_chosen_mib: mib(experts_chosen as u64),
        experts_mib: mib(experts as u64),
    })
}

/// The prefix tree over the `--generate` prompts of CLoMo and DeduCE (their contexts only, no
/// work after them), its recurrent snapshots within the process's budget.
fn snapshots(model: &Loaded, each: u64, args: &BenchArgs) -> anyhow::Result<Snapshots> {
    let jobs = generation_prompts(args.generate, 1)?
        .into_iter()
        .flat_map(|(_, prompts)| prompts)
        .enumerate()
        .map(|(i, (text, _))| {
            Ok(tree::Job {
                context: model.tokenize(&text)?,
                tags: vec![i],
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let prompts = jobs.len();
    let stats = tree::run(
        model,
        jobs,
        args.compute.threads,
        (args.compute.snapshot_budget as u64) << 20,
        |_, _| Ok(((), 0)),
        |_, (), _| Ok(()),
    )?;
    Ok(Snapshots {
        prompts,
        each_mib: mib(each),
        peak_mib: mib(stats.snapshot_peak_bytes),
        budget_mib: args.compute.snapshot_budget as f64,
        tree_tokens: stats.tree_tokens,
        replayed_tokens: stats.replayed_tokens,
    })
}

/// A stored prompt's context tokens and, per label scored after it, its tokens and the stored
/// log-probs' bits.
type StoredPrompt = (Vec<u32>, Vec<(Vec<u32>, Vec<u32>)>);

/// The scores stored in `store`, by prompt, tokenized by `model`. Refused: scores of several
/// models, of another numerics mode, or whose label tokens this model does not give (another
/// model's).
fn stored_prompts(model: &Loaded, store: &Path) -> anyhow::Result<Vec<StoredPrompt>> {
    let reg = Store::open_read(store)?;
    let mut by_prompt: std::collections::BTreeMap<[u8; 32], Vec<ScoreRecord>> = Default::default();
    let mut models = std::collections::BTreeSet::new();
    for (_, s) in reg.all::<ScoreRecord>()? {
        if s.backend != model.backend() {
            bail!(
                "a score of {:?} was computed in the {} mode; this child measures {}",
                s.label,
                s.backend,
                model.backend()
            );
        }
        models.insert(s.model);
        by_prompt.entry(s.prompt).or_default().push(s);
    }
    if models.len() != 1 {
        bail!("scores of {} models; one is needed", models.len());
    }
    by_prompt
        .into_iter()
        .map(|(prompt, scores)| {
            let id = Id(prompt);
            let text = reg
                .get::<PromptRecord>(&id)?
                .with_context(|| format!("prompt {} is not stored", id.short()))?
                .text;
            let labels: Vec<String> = scores.iter().map(|s| s.label.clone()).collect();
            let (context, tokens) = model.split_tokens(&text, &labels)?;
            let labels = scores
                .into_iter()
                .zip(tokens)
                .map(|(s, t)| {
                    if t != s.tokens {
                        bail!(
                            "label {:?} of prompt {}: this model's tokens are not the stored \
                             ones (scored by another model?)",
                            s.label,
                            id.short()
                        );
                    }
                    Ok((t, s.logprobs.iter().map(|x| x.to_bits()).collect()))
                })
                .collect::<anyhow::Result<_>>()?;
            Ok((context, labels))
        })
        .collect()
}

/// `--tree-from`: the stored scores through the prefix tree (as `score` computes them), then
/// straight, each prompt prefilled from the empty state and its labels scored after it, one
/// prompt at a time. Each way must give the stored bits.
fn tree_gain(model: &Loaded, store: &Path, args: &BenchArgs) -> anyhow::Result<TreeGain> {
    let prompts = stored_prompts(model, store)?;
    let labels: Vec<(usize, usize)> = prompts
        .iter()
        .enumerate()
        .flat_map(|(p, (_, ls))| (0..ls.len()).map(move |l| (p, l)))
        .collect();
    if labels.is_empty() {
        bail!("no scores stored");
    }
    let mut tags = 0..;
    let jobs = prompts
        .iter()
        .map(|(context, ls)| tree::Job {
            context: context.clone(),
            tags: tags.by_ref().take(ls.len()).collect(),
        })
        .collect();
    let same = |(p, l): (usize, usize), got: &[f32], way: &str| -> anyhow::Result<()> {
        let (tokens, want) = &prompts[p].1[l];
        if got.iter().map(|x| x.to_bits()).ne(want.iter().copied()) {
            bail!(
                "{way}: a score of {} tokens differs from the stored bits",
                tokens.len()
            );
        }
        Ok(())
    };
    let t = Instant::now();
    let stats = tree::run(
        model,
        jobs,
        args.compute.threads,
        (args.compute.snapshot_budget as u64) << 20,
        |tag, state| {
            let tokens = &prompts[labels[tag].0].1[labels[tag].1].0;
            Ok((
                model.score_continuation(state, tokens)?,
                tokens.len() as u64,
            ))
        },
        |tag, logprobs, _| same(labels[tag], &logprobs, "the prefix tree"),
    )?;
    let tree_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut straight_tokens = 0;
    for (p, (context, ls)) in prompts.iter().enumerate() {
        let state = model.prefill(&model.empty_state(), context)?;
        straight_tokens += context.len() as u64;
        for (l, (tokens, _)) in ls.iter().enumerate() {
            same(
                (p, l),
                &model.score_continuation(&state, tokens)?,
                "straight",
            )?;
            straight_tokens += tokens.len() as u64;
        }
    }
    Ok(TreeGain {
        prompts: prompts.len(),
        scores: labels.len(),
        tree_tokens: stats.forward_tokens,
        tree_s,
        straight_tokens,
        straight_s: t.elapsed().as_secs_f64(),
    })
}

/// Prompts with their decodings.
type Prompts = Vec<(String, Decoding)>;

/// `n` prompts of CLoMo and of DeduCE with their decodings (at most `tokens` each): CLoMo's
/// test items asking for a rewritten argument, in ChatML (the template of SmolLM2 and Qwen2.5;
/// the runner renders each model's own), and DeduCE's synthetic chains of 2 to 6 hops with their
/// first step given, under DeduCE's stop (a blank line).
fn generation_prompts(n: usize, tokens: usize) -> anyhow::Result<Vec<(&'static str, Prompts)>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    let home = crate::datasets::home::find(None)?;
    let data = home.dir.join("clomo/data");
    let items = read_split(&data, "test").with_context(|| {
        format!(
            "reading CLoMo's prompts from {} (--generate 0 skips the generation figures)",
            data.display()
        )
    })?;
    let max_tokens = tokens as u32;
    let clomo = items
        .iter()
        .step_by(items.len().div_ceil(n).max(1))
        .take(n)
        .map(|item| {
            let text = format!(
                "<|im_start|>system\n{}<|im_end|>\n<|im_start|>user\n{}<|im_end|>\n\
                 <|im_start|>assistant\n",
                item.instruction,
                item.input(Setting::Zero)
            );
            let decoding = Decoding {
                max_tokens,
                stop: Vec::new(),
            };
            (crate::model::tokenize::markup(&text), decoding)
        })
        .collect();
    let deduce = (0..n)
        .map(|i| {
            let p = synthetic::problem(11, 2 + i % 5, i)?;
            let decoding = Decoding {
                max_tokens,
                stop: vec!["\n\n".to_string()],
            };
            Ok((deduce::prompt(&p, 1), decoding))
        })
        .collect::<anyhow::Result<_>>()?;
    Ok(vec![("clomo", clomo), ("deduce", deduce)])
}

/// Tokens/s of greedy generation after each prompt, plain and speculative, alone and all
/// together; the outputs must agree (speculation changes no bit), or this is an error.
fn generating(
    model: &Loaded,
    benchmark: &str,
    prompts: &[(String, Decoding)],
    args: &BenchArgs,
) -> anyhow::Result<Generating> {
    let started: Vec<(Vec<u32>, State)> = prompts
        .iter()
        .map(|(text, _)| {
            let tokens = model.tokenize(text)?;
            let state = model.prefill(&model.empty_state(), &tokens)?;
            Ok((tokens, state))
        })
        .collect::<anyhow::Result<_>>()?;
    // Each way timed best of `reps`; returns the seconds, the outputs and the drafts.
    let run = |speculate: bool, together: bool| -> anyhow::Result<(f64, Vec<Generated>, Drafts)> {
        let mut best = (f64::INFINITY, Vec::new(), Drafts::default());
        for _ in 0..args.reps {
            let t = Instant::now();
            let mut outs = Vec::new();
            let mut drafts = Drafts::default();
            let groups = match together {
                true => vec![(0..prompts.len()).collect::<Vec<_>>()],
                false => (0..prompts.len()).map(|i| vec![i]).collect(),
            };
            for group in groups {
                let mut lockstep = Lockstep::new(model, speculate);
                for &i in &group {
                    let (tokens, state) = &started[i];
                    lockstep.join_after(i, state.clone(), tokens, &prompts[i].1)?;
                }
                while !lockstep.is_empty() {
                    outs.extend(lockstep.step()?);
                }
                let d = lockstep.drafts();
                drafts.passes += d.passes;
                drafts.tokens += d.tokens;
                drafts.drafted += d.drafted;
                drafts.accepted += d.accepted;
            }
            let s = t.elapsed().as_secs_f64();
            outs.sort_by_key(|(i, _)| *i);
            if s < best.0 {
                best = (s, outs.into_iter().map(|(_, g)| g).collect(), drafts);
            }
        }
        Ok(best)
    };
    let (plain_s, plain, _) = run(false, false)?;
    let (spec_s, spec, drafts) = run(true, false)?;
    let (together_plain_s, together_plain, _) = run(false, true)?;
    let (together_spec_s, together_spec, _) = run(true, true)?;
    for outs in [&spec, &together_plain, &together_spec] {
        if outs != &plain {
            bail!(
                "{benchmark}: speculative or stepped-together generations differ from plain ones"
            );
        }
    }
    let tokens = drafts.tokens;
    Ok(Generating {
        benchmark: benchmark.to_string(),
        prompts: prompts.len(),
        tokens,
        plain_tok_s: tokens as f64 / plain_s,
        speculative_tok_s: tokens as f64 / spec_s,
        together_plain_tok_s: tokens as f64 / together_plain_s,
        together_speculative_tok_s: tokens as f64 / together_spec_s,
        acceptance: drafts.accepted as f64 / drafts.drafted.max(1) as f64,
        tokens_per_pass: tokens as f64 / drafts.passes.max(1) as f64,
    })
}

/// The most likely token, ties to the lowest id (the greedy choice).
/// `steps` greedy decode steps of `states` together, each starting with its token of `next`,
/// as the runner's generations step (`Transformer::extend_each`: the blocks over each state's
/// token, then the LM head over them). Each state is moved in, so a recurrent layer's state is
/// advanced in place rather than copied at every step.
fn decode_steps(
    scorer: &Scorer,
    mut states: Vec<State>,
    mut next: Vec<u32>,
    steps: usize,
) -> anyhow::Result<()> {
    for _ in 0..steps {
        let runs: Vec<&[u32]> = next.iter().map(std::slice::from_ref).collect();
        let mut chosen = vec![0; next.len()];
        states = scorer.extend_each(states, &runs, &mut |i, logits| {
            chosen[i] = argmax(logits);
            1
        })?;
        next = chosen;
    }
    Ok(())
}

fn argmax(logits: &[f32]) -> u32 {
    let mut best = 0;
    for (i, &x) in logits.iter().enumerate() {
        if x > logits[best] {
            best = i;
        }
    }
    best as u32
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// VmHWM: the process's peak resident set.
fn peak_rss_kib() -> anyhow::Result<f64> {
    let status =
        std::fs::read_to_string("/proc/self/status").context("reading /proc/self/status")?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .context("no VmHWM in /proc/self/status")?;
    let kib = line.split_whitespace().nth(1).and_then(|v| v.parse().ok());
    kib.context("unreadable VmHWM line")
}

/// Starts VmHWM again from the memory in use (`clear_refs` 5), so that the next phase's peak is
/// its own: the heap that earlier phases freed and the allocator kept is handed back first.
fn reset_peak_rss() -> anyhow::Result<()> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap pages to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
    std::fs::write("/proc/self/clear_refs", "5")
        .context("resetting the peak RSS through /proc/self/clear_refs")
}

/// Bytes of the model: the GGUF file, or every file of a model directory.
fn model_bytes(model: &Path) -> anyhow::Result<u64> {
    let size = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| m.len())
            .with_context(|| format!("reading the size of {}", p.display()))
    };
    if !model.is_dir() {
        return size(model);
    }
    let mut total = 0;
    for entry in std::fs::read_dir(model).with_context(|| format!("listing {}", model.display()))? {
        let path = entry?.path();
        if path.is_file() {
            total += size(&path)?;
        }
    }
    Ok(total)
}

/// One figure of ours beside llama.cpp's of the same run.
#[derive(Serialize)]
struct Figure {
    ours: f64,
    llama_cpp: Option<f64>,
    /// ours / llama.cpp (higher is faster for us).
    ratio: Option<f64>,
    /// The weight matrices' work at our rate over the machine's limit (module docs).
    share_of_limit: Option<f64>,
    /// The same at llama.cpp's rate, over the limit measured beside it.
    llama_cpp_share_of_limit: Option<f64>,
}

/// A token's weight work over the machine's limit as measured beside each side: a rate times it
/// is that side's share of the limit.
#[derive(Clone, Copy)]
struct PerToken {
    ours: f64,
    /// None where nothing was measured beside llama.cpp.
    llama_cpp: Option<f64>,
}

impl PerToken {
    /// Both sides against the same limit.
    fn same(work: f64, limit: f64) -> PerToken {
        PerToken {
            ours: work / limit,
            llama_cpp: Some(work / limit),
        }
    }
}

impl Figure {
    fn new(ours: f64, llama_cpp: Option<f64>, per_token: Option<PerToken>) -> Figure {
        Figure {
            ours,
            llama_cpp,
            ratio: llama_cpp.map(|l| ours / l),
            share_of_limit: per_token.map(|p| ours * p.ours),
            llama_cpp_share_of_limit: llama_cpp
                .zip(per_token.and_then(|p| p.llama_cpp))
                .map(|(l, p)| l * p),
        }
    }

    fn cells(&self) -> [String; 5] {
        let opt = |v: Option<f64>, digits: usize| v.map_or("-".into(), |v| format!("{v:.digits$}"));
        [
            format!("{:.1}", self.ours),
            opt(self.llama_cpp, 1),
            opt(self.ratio, 2),
            opt(self.share_of_limit, 2),
            opt(self.llama_cpp_share_of_limit, 2),
        ]
    }
}

/// This machine's compute limit, measured once per run (the read is measured beside each
/// decode: `Read`).
#[derive(Serialize)]
struct Limits {
    /// The integer kernels' multiply-add peak, on all threads.
    int8_macs_per_s: f64,
}

/// A streaming read of memory on all threads, bytes per second, just before and just after a
/// decode.
#[derive(Clone, Copy, Serialize, Deserialize)]
struct Read {
    before: f64,
    after: f64,
}

impl Read {
    fn mean(&self) -> f64 {
        (self.before + self.after) / 2.0
    }
}

/// A streaming read: the threads each sum their part of a buffer far larger than the caches,
/// best of 5. Bytes per second.
fn read_bandwidth(threads: usize) -> f64 {
    const BYTES: usize = 1 << 30;
    let words = vec![1u64; BYTES / 8];
    let parts: Vec<&[u64]> = words.chunks(words.len().div_ceil(threads)).collect();
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let start = Barrier::new(parts.len());
        let t = Instant::now();
        let sum: u64 = std::thread::scope(|s| {
            let runs: Vec<_> = parts
                .iter()
                .map(|part| {
                    let start = &start;
                    s.spawn(move || {
                        start.wait();
                        // Eight running sums, so that the adds keep up with the loads.
                        let lanes = part.chunks_exact(8).fold([0u64; 8], |mut a, w| {
                            a.iter_mut()
                                .zip(w)
                                .for_each(|(a, w)| *a = a.wrapping_add(*w));
                            a
                        });
                        lanes.iter().fold(0u64, |a, &b| a.wrapping_add(b))
                    })
                })
                .collect();
            runs.into_iter()
                .map(|r| r.join().expect("no panic"))
                .fold(0, u64::wrapping_add)
        });
        best = best.min(t.elapsed().as_secs_f64());
        std::hint::black_box(sum);
    }
    BYTES as f64 / best
}

#[derive(Serialize)]
struct Prefill {
    tokens: usize,
    #[serde(flatten)]
    tok_s: Figure,
}

#[derive(Serialize)]
struct Row {
    model: String,
    backend: String,
    prefill_tok_s: Vec<Prefill>,
    decode_tok_s: Figure,
    /// The streaming read around our decode and around llama-bench's.
    decode_read: Read,
    llama_cpp_decode_read: Option<Read>,
    /// All `--parallel` generations together, against llama-batched-bench.
    parallel_decode_tok_s: Figure,
    load_s: f64,
    peak_rss_mib: f64,
    file_mib: f64,
    kv_mib: f64,
    /// Peak RSS over (file + KV cache): the memory target is at most 1.3.
    rss_over_file_and_kv: f64,
    /// The same of the parallel decode alone.
    parallel_peak_rss_mib: f64,
    parallel_kv_mib: f64,
    parallel_rss_over_file_and_kv: f64,
    /// Generation on the benchmarks' prompts, plain and speculative (llama.cpp's plain decode
    /// is `decode_tok_s`'s).
    generation: Vec<Generating>,
    snapshots: Option<Snapshots>,
    experts: Option<ExpertMemory>,
    tree: Option<TreeGain>,
}

/// Issue 45: a mixture of experts needs in memory only the experts tokens chose, besides the
/// dense weights (the file less its experts) and the KV cache; the target is peak RSS at most
/// 1.1 times that.
#[derive(Serialize)]
struct ExpertMemory {
    chosen_mib: f64,
    all_mib: f64,
    /// Peak RSS (the larger of the two decodes') over dense + chosen experts + KV.
    rss_over_needed: f64,
}

#[derive(Serialize)]
struct Report {
    threads: usize,
    limits: Limits,
    reps: usize,
    decode_tokens: usize,
    /// Generations stepped together in the second decode figure.
    parallel: usize,
    llama_bench: Option<String>,
    /// How llama-bench ran, per model (`--repack 0` when repacking crashed).
    llama_bench_notes: Vec<String>,
    rows: Vec<Row>,
}

fn drive(args: &BenchArgs, json: bool) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("locating this executable")?;
    let llama = match &args.llama_bench {
        Some(p) if !p.is_file() => bail!("--llama-bench {}: no such file", p.display()),
        Some(p) => Some(p.clone()),
        None => Some(PathBuf::from(LLAMA_BENCH)).filter(|p| p.is_file()),
    };
    let limits = Limits {
        int8_macs_per_s: qmatmul::peak_macs(args.compute.threads),
    };
    let mut report = Report {
        threads: args.compute.threads,
        reps: args.reps,
        limits,
        decode_tokens: args.decode,
        parallel: args.parallel,
        llama_bench: llama.as_ref().map(|p| p.display().to_string()),
        llama_bench_notes: Vec::new(),
        rows: Vec::new(),
    };
    for model in &args.models {
        let name = model
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let reference = match &llama {
            Some(bin) => {
                let r = llama_bench(bin, model, args)?;
                if let Some(note) = &r.note {
                    report.llama_bench_notes.push(format!("{name}: {note}"));
                }
                Some(r)
            }
            None => None,
        };
        let file_mib = mib(model_bytes(model)?);
        for &backend in &args.backends {
            let backend_name = format!("{backend:?}").to_lowercase();
            let tokens = args.tokens.iter().map(usize::to_string);
            let mut child = Command::new(&exe);
            child.arg("bench");
            if let Some(store) = &args.tree_from {
                child.args(["--tree-from".as_ref(), store.as_os_str()]);
            }
            let out = child
                .args(["--model".as_ref(), model.as_os_str()])
                .args(["--tokens", &tokens.collect::<Vec<_>>().join(",")])
                .args(["--decode", &args.decode.to_string()])
                .args(["--parallel", &args.parallel.to_string()])
                .args(["--threads", &args.compute.threads.to_string()])
                .args([
                    "--snapshot-budget",
                    &args.compute.snapshot_budget.to_string(),
                ])
                .args(["--generate", &args.generate.to_string()])
                .args(["--generate-tokens", &args.generate_tokens.to_string()])
                .args(["--reps", &args.reps.to_string(), "--only", &backend_name])
                .output()
                .context("running the benchmark child")?;
            if !out.status.success() {
                bail!(
                    "{} on {backend_name}: {}",
                    model.display(),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            let m: Measurement = serde_json::from_slice(&out.stdout).context("child output")?;
            let integer = backend == Backend::Int8;
            let compute =
                integer.then(|| PerToken::same(m.macs_per_token, report.limits.int8_macs_per_s));
            let llama_read = reference.as_ref().map(|r| r.tg_read);
            let prefill = args
                .tokens
                .iter()
                .zip(&m.prefill_tok_s)
                .map(|(&n, &ours)| Prefill {
                    tokens: n,
                    tok_s: Figure::new(ours, reference.as_ref().and_then(|r| r.pp(n)), compute),
                })
                .collect();
            let memory = PerToken {
                ours: m.decode_bytes / m.decode_read.mean(),
                llama_cpp: llama_read.map(|r| m.decode_bytes / r.mean()),
            };
            report.rows.push(Row {
                model: name.clone(),
                backend: backend_name,
                prefill_tok_s: prefill,
                decode_tok_s: Figure::new(
                    m.decode_tok_s,
                    reference.as_ref().and_then(|r| r.tg),
                    Some(memory),
                ),
                decode_read: m.decode_read,
                llama_cpp_decode_read: llama_read,
                // A step reads the weights once for every generation: a short prefill, whose
                // share is of the multiply-add peak.
                parallel_decode_tok_s: Figure::new(
                    m.parallel_decode_tok_s,
                    reference.as_ref().and_then(|r| r.parallel_tg),
                    compute,
                ),
                load_s: m.load_s,
                peak_rss_mib: m.peak_rss_mib,
                file_mib,
                kv_mib: m.kv_mib,
                rss_over_file_and_kv: m.peak_rss_mib / (file_mib + m.kv_mib),
                parallel_peak_rss_mib: m.parallel_peak_rss_mib,
                parallel_kv_mib: m.parallel_kv_mib,
                parallel_rss_over_file_and_kv: m.parallel_peak_rss_mib
                    / (file_mib + m.parallel_kv_mib),
                generation: m.generation,
                experts: (m.experts_mib > 0.0).then(|| {
                    let dense = file_mib - m.experts_mib;
                    ExpertMemory {
                        chosen_mib: m.experts_chosen_mib,
                        all_mib: m.experts_mib,
                        rss_over_needed: (m.peak_rss_mib
                            / (dense + m.experts_chosen_mib + m.kv_mib))
                            .max(
                                m.parallel_peak_rss_mib
                                    / (dense + m.experts_chosen_mib + m.parallel_kv_mib),
                            ),
                    }
                }),
                snapshots: m.snapshots,
                tree: m.tree,
            });
        }
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_table(&report);
    }
    Ok(())
}

/// Generation on the benchmarks' prompts: ours plain and speculative, alone and together,
/// beside llama.cpp's plain decode (llama-bench tg from an empty cache).
fn print_generation(r: &Report) {
    if r.rows.iter().all(|row| row.generation.is_empty()) {
        return;
    }
    println!(
        "generation, greedy, on the benchmarks' prompts (tok/s; spec: speculative decoding; \
         together: all prompts in one lockstep; llama.cpp: its plain tg{} above)",
        r.decode_tokens
    );
    println!(
        "{:<36} {:>7} {:>7} {:>7} {:>9} {:>9} {:>7} {:>9} {:>9} {:>7} {:>7} {:>9}",
        "model",
        "backend",
        "bench",
        "tokens",
        "plain",
        "spec",
        "speedup",
        "tog.plain",
        "tog.spec",
        "accept",
        "tok/pass",
        "llama.cpp"
    );
    for row in &r.rows {
        for g in &row.generation {
            println!(
                "{:<36} {:>7} {:>7} {:>7} {:>9.1} {:>9.1} {:>7.2} {:>9.1} {:>9.1} {:>7.2} {:>7.2} {:>9}",
                row.model,
                row.backend,
                g.benchmark,
                g.tokens,
                g.plain_tok_s,
                g.speculative_tok_s,
                g.speculative_tok_s / g.plain_tok_s,
                g.together_plain_tok_s,
                g.together_speculative_tok_s,
                g.acceptance,
                g.tokens_per_pass,
                row.decode_tok_s
                    .llama_cpp
                    .map_or("-".into(), |v| format!("{v:.1}"))
            );
        }
    }
}

fn print_table(r: &Report) {
    println!(
        "{} threads, best of {} on both sides; decode: {} tokens after a 1-token prompt; llama.cpp: {}",
        r.threads,
        r.reps,
        r.decode_tokens,
        r.llama_bench
            .as_deref()
            .unwrap_or("not measured (no --llama-bench)")
    );
    println!(
        "this machine: integer multiply-add peak {:.1} G/s; a streaming read measured around \
         each decode (GB/s, ours / llama.cpp's). share, l.share: the weight matrices' work at our \
         rate, at llama.cpp's, over that limit (prefill and parallel decode in int8, decode)",
        r.limits.int8_macs_per_s / 1e9,
    );
    println!(
        "{:<36} {:>7} {:>10} {:>9} {:>10} {:>9} {:>6} {:>7} {:>11} {:>9} {:>9} {:>9}",
        "model",
        "backend",
        "figure",
        "ours",
        "llama.cpp",
        "ratio",
        "share",
        "l.share",
        "read GB/s",
        "RSS MiB",
        "file+KV",
        "RSS/(f+KV)"
    );
    for row in &r.rows {
        let figures = row
            .prefill_tok_s
            .iter()
            .map(|p| (format!("pp{}", p.tokens), &p.tok_s))
            .chain([
                (format!("tg{}", r.decode_tokens), &row.decode_tok_s),
                (
                    format!("tg{}x{}", r.decode_tokens, r.parallel),
                    &row.parallel_decode_tok_s,
                ),
            ]);
        let last = row.prefill_tok_s.len() + 1;
        for (i, (figure, f)) in figures.enumerate() {
            let [ours, lc, ratio, share, lc_share] = f.cells();
            let read = match i {
                i if i == last - 1 => format!(
                    "{:.1} / {}",
                    row.decode_read.mean() / 1e9,
                    row.llama_cpp_decode_read
                        .map_or("-".into(), |r| format!("{:.1}", r.mean() / 1e9))
                ),
                _ => String::new(),
            };
            // The parallel decode's memory is its own (`reset_peak_rss`), on its line.
            let memory = match i {
                0 => format!(
                    "{:>9.0} {:>9.0} {:>9.2}",
                    row.peak_rss_mib,
                    row.file_mib + row.kv_mib,
                    row.rss_over_file_and_kv
                ),
                i if i == last => format!(
                    "{:>9.0} {:>9.0} {:>9.2}",
                    row.parallel_peak_rss_mib,
                    row.file_mib + row.parallel_kv_mib,
                    row.parallel_rss_over_file_and_kv
                ),
                _ => String::new(),
            };
            println!(
                "{:<36} {:>7} {:>10} {:>9} {:>10} {:>9} {:>6} {:>7} {:>11} {memory}",
                row.model, row.backend, figure, ours, lc, ratio, share, lc_share, read
            );
        }
    }
    for row in &r.rows {
        if let Some(e) = &row.experts {
            println!(
                "{} {}: experts chosen {:.0} of {:.0} MiB; peak RSS / (dense + chosen + KV) {:.2}",
                row.model, row.backend, e.chosen_mib, e.all_mib, e.rss_over_needed
            );
        }
    }
    print_generation(r);
    for row in &r.rows {
        if let Some(s) = &row.snapshots {
            println!(
                "{} {}: prefix tree over {} benchmark prompts ({} distinct tokens): recurrent \
                 snapshots of {:.1} MiB, at most {:.1} MiB kept (budget {:.0} MiB), {} tokens \
                 replayed",
                row.model,
                row.backend,
                s.prompts,
                s.tree_tokens,
                s.each_mib,
                s.peak_mib,
                s.budget_mib,
                s.replayed_tokens
            );
        }
    }
    for row in &r.rows {
        if let Some(g) = &row.tree {
            println!(
                "{} {}: {} stored scores of {} prompts through the prefix tree: {} tokens in \
                 {:.1} s; straight, each prompt from the empty state: {} tokens in {:.1} s; the \
                 tree's gain {:.2}x in time, {:.2}x in tokens (the same bits both ways)",
                row.model,
                row.backend,
                g.scores,
                g.prompts,
                g.tree_tokens,
                g.tree_s,
                g.straight_tokens,
                g.straight_s,
                g.straight_s / g.tree_s,
                g.straight_tokens as f64 / g.tree_tokens as f64
            );
        }
    }
    for note in &r.llama_bench_notes {
        println!("note: {note}");
    }
}

/// llama-bench's figures for one model: prompt processing per length, and text generation.
struct Reference {
    pp: Vec<(usize, f64)>,
    tg: Option<f64>,
    /// The streaming read around its `tg` run.
    tg_read: Read,
    /// llama-batched-bench's generation rate of `--parallel` sequences together.
    parallel_tg: Option<f64>,
    note: Option<String>,
}

impl Reference {
    fn pp(&self, tokens: usize) -> Option<f64> {
        self.pp.iter().find(|p| p.0 == tokens).map(|p| p.1)
    }
}

/// llama-bench on the same file and thread count: one run of the prompt lengths (`-p`), then
/// one of the decode (`-n`) between two streaming reads. Weight repacking is llama.cpp's default;
/// where its repacked (AMX) kernels crash, as on some CPUs, the runs are repeated without, and
/// the note says so.
fn llama_bench(exe: &Path, model: &Path, args: &BenchArgs) -> anyhow::Result<Reference> {
    let lengths: Vec<String> = args.tokens.iter().map(usize::to_string).collect();
    let (prompts, decode) = (lengths.join(","), args.decode.to_string());
    // Each timed test's best run, as (prompt tokens, generated tokens, tok/s); None when
    // llama-bench failed.
    let run = |prompt: &str,
               generate: &str,
               extra: &[&str]|
     -> anyhow::Result<Option<Vec<(usize, usize, f64)>>> {
        let out = Command::new(exe)
            .args(["-m".as_ref(), model.as_os_str()])
            .args(["-p", prompt, "-n", generate])
            .args(["-t", &args.compute.threads.to_string()])
            .args(["-r", &args.reps.to_string(), "-o", "json"])
            .args(extra)
            .output()
            .with_context(|| format!("running {}", exe.display()))?;
        if !out.status.success() {
            return Ok(None);
        }
        let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout)
            .with_context(|| format!("{}: unreadable JSON output", exe.display()))?;
        let field = |r: &serde_json::Value, k: &str| r[k].as_u64().unwrap_or(0) as usize;
        let mut tests = Vec::new();
        for r in &rows {
            // The best of its timed runs, as ours is the best of ours: its mean beside our best
            // favoured us by the machine's noise (on a busy machine one llama-bench figure's
            // runs spanned 61–127 tok/s).
            let samples = r["samples_ts"].as_array().with_context(|| {
                format!(
                    "{}: no `samples_ts` in its JSON (an older build?): the best of its runs is \
                     needed to compare with the best of ours",
                    exe.display()
                )
            })?;
            let best = samples
                .iter()
                .map(|v| v.as_f64().filter(|t| t.is_finite() && *t > 0.0))
                .collect::<Option<Vec<f64>>>()
                .filter(|ts| !ts.is_empty())
                .with_context(|| format!("{}: `samples_ts` is not a list of rates", exe.display()))?
                .into_iter()
                .fold(0.0, f64::max);
            tests.push((field(r, "n_prompt"), field(r, "n_gen"), best));
        }
        Ok(Some(tests))
    };
    const NO_REPACK: [&str; 2] = ["--repack", "0"];
    let (pp, repack, note) = match run(&prompts, "0", &[])? {
        Some(t) => (t, true, None),
        None => match run(&prompts, "0", &NO_REPACK)? {
            Some(t) => (
                t,
                false,
                Some("llama-bench ran with --repack 0 (it crashed with repacking)".to_string()),
            ),
            None => bail!("{} failed on {}", exe.display(), model.display()),
        },
    };
    let before = read_bandwidth(args.compute.threads);
    let tg = run("0", &decode, if repack { &[] } else { &NO_REPACK })?
        .with_context(|| format!("{} failed to decode {}", exe.display(), model.display()))?;
    let tg_read = Read {
        before,
        after: read_bandwidth(args.compute.threads),
    };
    let batched = exe.with_file_name("llama-batched-bench");
    Ok(Reference {
        pp: pp
            .iter()
            .filter(|t| t.0 > 0 && t.1 == 0)
            .map(|t| (t.0, t.2))
            .collect(),
        tg: tg
            .iter()
            .find(|t| t.0 == 0 && t.1 == args.decode)
            .map(|t| t.2),
        tg_read,
        parallel_tg: match batched.is_file() {
            true => Some(llama_batched_bench(&batched, model, args, repack)?),
            false => None,
        },
        note,
    })
}

/// llama-batched-bench's rate of `--parallel` sequences decoded together, each after its own
/// one-token prompt (`-npp 1 -ntg` the decode count), best of `--reps` runs (it times one run).
fn llama_batched_bench(
    exe: &Path,
    model: &Path,
    args: &BenchArgs,
    repack: bool,
) -> anyhow::Result<f64> {
    let context = args.parallel * (args.decode + 1);
    let mut best = 0f64;
    for _ in 0..args.reps {
        let out = Command::new(exe)
            .args(["-m".as_ref(), model.as_os_str()])
            .args(["-npp", "1", "-ntg", &args.decode.to_string()])
            .args(["-npl", &args.parallel.to_string()])
            .args([
                "-c",
                &context.to_string(),
                "-t",
                &args.compute.threads.to_string(),
            ])
            .args(["--output-format", "jsonl"])
            .args(if repack {
                &[][..]
            } else {
                &["--no-repack"][..]
            })
            .output()
            .with_context(|| format!("running {}", exe.display()))?;
        if !out.status.success() {
            bail!(
                "{} failed on {}: {}",
                exe.display(),
                model.display(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        let rate = stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find_map(|r| r["speed_tg"].as_f64().filter(|t| t.is_finite() && *t > 0.0))
            .with_context(|| format!("{}: no `speed_tg` in its output", exe.display()))?;
        best = best.max(rate);
    }
    Ok(best)
}
