//! What every family's readers share: typed access to config.json ([`HfJson`]) and the GGUF
//! metadata keys every family reads ([`gguf_base_config`]), with the rule that a key a family does
//! not implement is refused by name ([`refuse_unknown_keys`]); and, for `model export-hf`, the
//! config.json keys every family writes the same way.

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use crate::model::block::config::{Config, Rope, Shape};
use crate::model::block::transformer::{Blocks, RawTensor, TensorDesc, TensorFile};
use crate::model::format::gguf::Gguf;
use crate::model::{invalid, ModelError};

/// Typed access to a parsed config.json, with errors naming the file and key.
pub struct HfJson {
    pub path: PathBuf,
    pub value: Value,
}

impl HfJson {
    pub fn read(path: &Path) -> Result<HfJson, ModelError> {
        let text = std::fs::read_to_string(path).map_err(|source| ModelError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let value = serde_json::from_str(&text)
            .map_err(|e| invalid(path, format!("not valid JSON: {e}")))?;
        Ok(HfJson {
            path: path.to_path_buf(),
            value,
        })
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.value.get(key).filter(|v| !v.is_null())
    }

    pub fn usize(&self, key: &str) -> Result<usize, ModelError> {
        self.opt_usize(key)?
            .ok_or_else(|| invalid(&self.path, format!("missing key {key:?}")))
    }

    pub fn opt_usize(&self, key: &str) -> Result<Option<usize>, ModelError> {
        self.get(key)
            .map(|v| {
                v.as_u64()
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or_else(|| invalid(&self.path, format!("{key:?} is not a count: {v}")))
            })
            .transpose()
    }

    pub fn opt_f32(&self, key: &str) -> Result<Option<f32>, ModelError> {
        self.get(key)
            .map(|v| {
                v.as_f64()
                    .map(|x| x as f32)
                    .ok_or_else(|| invalid(&self.path, format!("{key:?} is not a number: {v}")))
            })
            .transpose()
    }

    pub fn f32(&self, key: &str) -> Result<f32, ModelError> {
        self.opt_f32(key)?
            .ok_or_else(|| invalid(&self.path, format!("missing key {key:?}")))
    }

    pub fn bool_or(&self, key: &str, default: bool) -> Result<bool, ModelError> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v
                .as_bool()
                .ok_or_else(|| invalid(&self.path, format!("{key:?} is not a boolean: {v}"))),
        }
    }

    /// Refuses a rope_scaling this architecture's file does not implement, rather than run the
    /// model with the wrong positions; `linear` (one factor) is implemented for every
    /// architecture, as llama.cpp implements it for every one.
    pub fn no_rope_scaling(&self, arch: &str) -> Result<Option<(Vec<f32>, String)>, ModelError> {
        let Some(s) = self.get("rope_scaling") else {
            return Ok(None);
        };
        let kind = rope_scaling_type(s);
        match kind.as_deref() {
            Some("default") | Some("none") => Ok(None),
            Some("linear") => {
                let factor = s.get("factor").and_then(|f| f.as_f64()).ok_or_else(|| {
                    invalid(
                        &self.path,
                        format!("rope_scaling {s}: linear needs a factor"),
                    )
                })? as f32;
                Ok(Some((vec![factor], format!("linear {factor}"))))
            }
            _ => Err(invalid(
                &self.path,
                format!(
                    "rope_scaling type {} is not implemented for {arch} ({s})",
                    kind.unwrap_or_else(|| "(none given)".into())
                ),
            )),
        }
    }

    /// Refuses an MLP activation other than `want` (`hidden_act` / `hidden_activation`).
    pub fn expect_activation(&self, want: &[&str]) -> Result<(), ModelError> {
        for key in ["hidden_act", "hidden_activation"] {
            if let Some(v) = self.get(key) {
                let name = v.as_str().unwrap_or_default();
                if !want.contains(&name) {
                    return Err(invalid(
                        &self.path,
                        format!(
                            "{key} {v} is not implemented (expected {})",
                            want.join(" or ")
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The fields every supported Hugging Face architecture shares, with Llama's defaults; the
    /// architecture files adjust the rest.
    pub fn base_config(&self, arch: &str) -> Result<Config, ModelError> {
        let hidden = self.usize("hidden_size")?;
        let heads = self.usize("num_attention_heads")?;
        if heads == 0 || !hidden.is_multiple_of(heads) && self.get("head_dim").is_none() {
            return Err(invalid(
                &self.path,
                format!("hidden_size {hidden} is not a multiple of num_attention_heads {heads}"),
            ));
        }
        let head_dim = self.opt_usize("head_dim")?.unwrap_or(hidden / heads);
        let shape = Shape {
            vocab_size: self.usize("vocab_size")?,
            hidden,
            intermediate: self.usize("intermediate_size")?,
            layers: self.usize("num_hidden_layers")?,
            heads,
            kv_heads: self.opt_usize("num_key_value_heads")?.unwrap_or(heads),
            head_dim,
            norm_eps: self.f32("rms_norm_eps")?,
            rope_theta: self.opt_f32("rope_theta")?.unwrap_or(10_000.0),
            max_positions: self.usize("max_position_embeddings")?,
        };
        Ok(Config {
            qkv_bias: self.bool_or("attention_bias", false)?,
            tied_embeddings: self.bool_or("tie_word_embeddings", false)?,
            ..Config::plain(arch, shape)
        })
    }

    /// Issue 43: transformers 5 writes `rope_parameters` (`rope_type`, `rope_theta`, and the
    /// scaling's own fields) where older configs have `rope_theta` and `rope_scaling`. The base it
    /// gives, `None` when the file has none; any type but the default is refused for `arch`, as
    /// are both layouts at once.
    pub fn default_rope_parameters(&self, arch: &str) -> Result<Option<f32>, ModelError> {
        let Some(p) = self.get("rope_parameters") else {
            return Ok(None);
        };
        if self.get("rope_scaling").is_some() || self.get("rope_theta").is_some() {
            return Err(invalid(
                &self.path,
                "rope_parameters together with rope_theta or rope_scaling: which applies is \
                 ambiguous",
            ));
        }
        match rope_scaling_type(p).as_deref() {
            None | Some("default") => {}
            Some(other) => {
                return Err(invalid(
                    &self.path,
                    format!("rope_parameters type {other} is not implemented for {arch} ({p})"),
                ))
            }
        }
        let theta = p.get("rope_theta").and_then(Value::as_f64).ok_or_else(|| {
            invalid(
                &self.path,
                format!("rope_parameters {p} has no numeric rope_theta"),
            )
        })?;
        Ok(Some(theta as f32))
    }

    /// Refuses a sliding window this architecture does not apply (`use_sliding_window`
    /// true with a `sliding_window`), which would change results past the window.
    pub fn no_sliding_window(&self, arch: &str) -> Result<(), ModelError> {
        if self.bool_or("use_sliding_window", false)? {
            if let Some(w) = self.get("sliding_window") {
                return Err(invalid(
                    &self.path,
                    format!(
                        "use_sliding_window with sliding_window {w} is not implemented for {arch}"
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Linear rope scaling as `no_rope_scaling` returned it, set on `cfg`'s rope.
pub fn apply_linear(cfg: &mut Config, linear: Option<(Vec<f32>, String)>) {
    if let Some((f, name)) = linear {
        cfg.rope.freq_factors = Some(vec![f[0]; cfg.rope.rotary_dim / 2]);
        cfg.rope.scaling = Some(name);
    }
}

/// `rope_scaling`'s type, under either of its keys.
pub fn rope_scaling_type(s: &Value) -> Option<String> {
    s.get("rope_type")
        .or_else(|| s.get("type"))
        .and_then(|v| v.as_str())
        .map(str::to_string)
}

/// The `{arch}.` metadata keys every family's reader below implements.
const GGUF_COMMON_KEYS: &[&str] = &[
    "context_length",
    "embedding_length",
    "block_count",
    "feed_forward_length",
    "attention.head_count",
    "attention.head_count_kv",
    "attention.key_length",
    "attention.value_length",
    "attention.layer_norm_rms_epsilon",
    "rope.dimension_count",
    "rope.freq_base",
    "rope.scaling.type",
    "rope.scaling.factor",
    "rope.scale_linear",
    "rope.scaling.attn_factor",
    // Read by llama.cpp only for YaRN, which only `mistral3` implements (the others refuse it by
    // name).
    "rope.scaling.original_context_length",
    "rope.scaling.finetuned",
    "vocab_size",
];

/// Refuses any `{arch}.` metadata key outside `GGUF_COMMON_KEYS` and the family's `own` keys,
/// unless it holds the value that changes nothing (`harmless`): llama.cpp's loader may read it,
/// and running without it could be silently wrong.
pub fn refuse_unknown_keys(g: &Gguf, arch: &str, own: &[&str]) -> Result<(), ModelError> {
    let prefix = format!("{arch}.");
    for (k, v) in g.metadata() {
        let Some(rest) = k.strip_prefix(&prefix) else {
            continue;
        };
        if GGUF_COMMON_KEYS.contains(&rest) || own.contains(&rest) {
            continue;
        }
        let harmless = match rest {
            "attention.causal" => *v == crate::model::format::gguf::Value::Bool(true),
            "expert_count" | "expert_used_count" | "pooling_type" => v.as_i128() == Some(0),
            _ => false,
        };
        if !harmless {
            return Err(invalid(
                g.path(),
                format!("metadata key {k} ({v:?}) is not implemented for {arch}"),
            ));
        }
    }
    Ok(())
}

/// Issue 43: what llama.cpp's smollm3, olmo2 and mistral3 loaders take but this engine does
/// not: q, k and v fused in one `attn_qkv` tensor (read before the separate ones), and a rotary
/// dimension other than the head size (their graphs assert it equals).
pub fn refuse_fused_qkv_and_partial_rope(g: &Gguf, cfg: &Config) -> Result<(), ModelError> {
    if let Some(name) = g
        .tensor_names()
        .find(|n| n.starts_with("blk.") && n.contains(".attn_qkv."))
    {
        return Err(invalid(
            g.path(),
            format!(
                "tensor {name} (q, k and v fused) is not implemented for {}",
                cfg.arch
            ),
        ));
    }
    if cfg.rope.rotary_dim != cfg.head_dim {
        return Err(invalid(
            g.path(),
            format!(
                "{}.rope.dimension_count {} differs from the head dim {}: llama.cpp's {} needs them equal",
                cfg.arch, cfg.rope.rotary_dim, cfg.head_dim, cfg.arch
            ),
        ));
    }
    Ok(())
}

/// The GGUF metadata every supported architecture shares, under its `{arch}.` prefix, with the
/// layout and flags left for the architecture files to set. Rope scaling: `none`, and `linear`
/// (llama.cpp's default type when a factor is given) are implemented here; the families take
/// `longrope` (phi3) themselves, and every other type is refused by name.
pub fn gguf_base_config(g: &Gguf, arch: &str) -> Result<Config, ModelError> {
    gguf_config_with(g, arch, &[])
}

/// [`gguf_base_config`], with the rope scaling types the family reads itself (`reads_itself`:
/// phi3's `longrope`, whose magnitude factor it reads too; Mistral 3's `yarn`).
pub fn gguf_config_with(g: &Gguf, arch: &str, reads_itself: &[&str]) -> Result<Config, ModelError> {
    let key = |k: &str| format!("{arch}.{k}");
    let opt_u32 = |k: &str| g.get(&key(k)).map(|_| g.get_u32(&key(k))).transpose();
    let opt_f32 = |k: &str| g.get(&key(k)).map(|_| g.get_f32(&key(k))).transpose();
    let hidden = g.get_u32(&key("embedding_length"))? as usize;
    let layers = g.get_u32(&key("block_count"))? as usize;
    let heads = uniform(g, &key("attention.head_count"), layers)?;
    if heads == 0 {
        return Err(invalid(
            g.path(),
            format!("{} is 0", key("attention.head_count")),
        ));
    }
    let head_dim = opt_u32("attention.key_length")?.map_or(hidden / heads, |v| v as usize);
    if let Some(v) = opt_u32("attention.value_length")? {
        if v as usize != head_dim {
            return Err(invalid(
                g.path(),
                format!(
                    "{} {v} differs from the key length {head_dim}: not implemented",
                    key("attention.value_length")
                ),
            ));
        }
    }
    let kind = match g.get(&key("rope.scaling.type")) {
        Some(_) => g.get_str(&key("rope.scaling.type"))?.to_string(),
        None => "linear".to_string(),
    };
    let rotary_dim = opt_u32("rope.dimension_count")?.map_or(head_dim, |v| v as usize);
    let factor = match opt_f32("rope.scaling.factor")? {
        Some(f) => Some(f),
        None => opt_f32("rope.scale_linear")?,
    };
    let (freq_factors, scaling) = match kind.as_str() {
        "none" => (None, None),
        "linear" => match factor {
            Some(f) if f != 0.0 && f != 1.0 => {
                (Some(vec![f; rotary_dim / 2]), Some(format!("linear {f}")))
            }
            _ => (None, None),
        },
        // Scalings the family reads itself (phi3's longrope, Mistral 3's YaRN).
        own if reads_itself.contains(&own) => (None, None),
        other => {
            return Err(invalid(
                g.path(),
                format!(
                    "{} {other:?} is not implemented for {arch}",
                    key("rope.scaling.type")
                ),
            ))
        }
    };
    if !reads_itself.contains(&"longrope") {
        if let Some(f) = opt_f32("rope.scaling.attn_factor")? {
            if f != 1.0 {
                return Err(invalid(
                    g.path(),
                    format!(
                        "{} {f} is not implemented for {arch}",
                        key("rope.scaling.attn_factor")
                    ),
                ));
            }
        }
    }
    // llama.cpp sizes the vocabulary by the tokenizer's token list.
    let tokens = g.get_str_array("tokenizer.ggml.tokens")?.len();
    if let Some(v) = opt_u32("vocab_size")? {
        if v as usize != tokens {
            return Err(invalid(
                g.path(),
                format!(
                    "{} {v} differs from the {tokens} tokens of tokenizer.ggml.tokens",
                    key("vocab_size")
                ),
            ));
        }
    }
    let widths = per_layer(g, &key("feed_forward_length"), layers)?;
    let kv_heads = match g.get(&key("attention.head_count_kv")) {
        Some(_) => uniform(g, &key("attention.head_count_kv"), layers)?,
        None => heads,
    };
    let shape = Shape {
        vocab_size: tokens,
        hidden,
        intermediate: widths[0],
        layers,
        heads,
        kv_heads,
        head_dim,
        norm_eps: g.get_f32(&key("attention.layer_norm_rms_epsilon"))?,
        rope_theta: opt_f32("rope.freq_base")?.unwrap_or(10_000.0),
        max_positions: g.get_u32(&key("context_length"))? as usize,
    };
    let plain = Config::plain(arch, shape);
    Ok(Config {
        rope: Rope {
            rotary_dim,
            freq_factors,
            scaling,
            ..plain.rope.clone()
        },
        // llama.cpp's rule: no separate output matrix means the embedding is reused.
        tied_embeddings: g.tensor_info("output.weight").is_none(),
        // Issue 43: a list of MLP widths (Gemma 4's double-wide MLP), kept only where they
        // differ.
        layer_intermediate: match widths.iter().all(|w| *w == widths[0]) {
            true => Vec::new(),
            false => widths,
        },
        ..plain
    })
}

/// The local layers' rope from `{arch}.rope.freq_base_swa`, as llama.cpp's
/// `get_rope_freq_base` applies it: the global rope (its scaling too) at that base, when the file
/// gives one that differs.
pub fn gguf_local_base(g: &Gguf, arch: &str, cfg: &mut Config) -> Result<(), ModelError> {
    let key = format!("{arch}.rope.freq_base_swa");
    if g.get(&key).is_none() {
        return Ok(());
    }
    let base = g.get_f32(&key)?;
    if base != cfg.rope.theta {
        cfg.rope_local = Some(Rope {
            theta: base,
            ..cfg.rope.clone()
        });
    }
    Ok(())
}

/// A count llama.cpp reads with `get_key_or_arr`: one number, or one per layer (`layers` of
/// them, as llama.cpp requires).
fn per_layer(g: &Gguf, key: &str, layers: usize) -> Result<Vec<usize>, ModelError> {
    use crate::model::format::gguf::Value as V;
    let Some(V::Array(items)) = g.get(key) else {
        return Ok(vec![g.get_u32(key)? as usize; layers.max(1)]);
    };
    if items.len() != layers || layers == 0 {
        return Err(invalid(
            g.path(),
            format!("{key} lists {} values for {layers} layers", items.len()),
        ));
    }
    items
        .iter()
        .map(|v| {
            v.as_i128()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| invalid(g.path(), format!("{key} holds {v:?}, not a count")))
        })
        .collect()
}

/// A count that may be listed per layer, where the block implements only one value for every
/// layer: a list of different values is refused by name.
fn uniform(g: &Gguf, key: &str, layers: usize) -> Result<usize, ModelError> {
    let values = per_layer(g, key, layers)?;
    match values.iter().all(|v| *v == values[0]) {
        true => Ok(values[0]),
        false => Err(invalid(
            g.path(),
            format!("{key} differs between layers ({values:?}): not implemented"),
        )),
    }
}

/// Linear rope scaling (the only kind `HfJson::no_rope_scaling` takes) as config.json says it;
/// nothing when the rope is unscaled.
pub fn linear_scaling_json(cfg: &Config, json: &mut Map<String, Value>) {
    if let Some(f) = cfg
        .rope
        .scaling
        .as_deref()
        .and_then(|s| s.strip_prefix("linear "))
    {
        if let Ok(factor) = f.parse::<f32>() {
            json.insert(
                "rope_scaling".into(),
                json!({"rope_type": "linear", "factor": f64::from(factor)}),
            );
        }
    }
}

/// A file with some tensors left out of its names: ones a family's loaders never read (Qwen3.5's
/// MTP draft layers, Gemma 4's shared layers' own k and v), so that the check for unread tensors
/// passes them by. Everything else is the file's.
pub struct Unread<'a> {
    pub inner: &'a dyn TensorFile,
    pub unread: Box<dyn Fn(&str) -> bool + 'a>,
}

impl TensorFile for Unread<'_> {
    fn path(&self) -> &Path {
        self.inner.path()
    }

    fn tensor(&self, name: &str) -> Result<Option<RawTensor>, ModelError> {
        self.inner.tensor(name)
    }

    fn blocks(&self, name: &str) -> Result<Option<Blocks>, ModelError> {
        self.inner.blocks(name)
    }

    fn describe(&self, name: &str) -> Result<Option<TensorDesc>, ModelError> {
        self.inner.describe(name)
    }

    fn names(&self) -> Vec<String> {
        let mut names = self.inner.names();
        names.retain(|n| !(self.unread)(n));
        names
    }
}
