//! Model families: how each family's files describe the one shared decoder block
//! (`block::transformer`), and what each refuses.
//!
//! A family is one file implementing [`Family`] and one line in [`FAMILIES`]: its GGUF keys and
//! its config.json reading, its tensor names both ways, the views that serve its files' tensors
//! as the block reads them (fused matrices cut, q/k rows reordered, norms stored as offsets), the
//! inverse of those views for `model export-hf`, and every key or tensor it does not implement,
//! refused by name. Nothing outside a family's own file matches on its name
//! (`tests/suite/proof_family.rs` checks it, and defines a family of its own that loads, scores,
//! exports and inspects through a [`Families`] of its own, with no change to `src/`).

pub mod gemma2;
pub mod gemma3;
pub mod gemma4;
pub mod gpt_oss;
pub mod llama;
pub mod mistral3;
pub mod olmo2;
pub mod phi3;
pub mod qwen2;
pub mod qwen3;
pub mod qwen35;
pub mod qwen3moe;
pub mod read;
pub mod smollm3;

use serde_json::{Map, Value};

use crate::model::block::config::Config;
use crate::model::block::transformer::{Naming, Part, RawTensor, TensorFile};
use crate::model::format::gguf::{self, Gguf};
use crate::model::ModelError;
use read::HfJson;

/// One model family. Every method but the names and the two config readers has the default of
/// a family whose files follow Llama's names and need no view.
pub trait Family: Sync {
    /// `general.architecture` in its GGUF files, and `Config::arch` of its models.
    fn gguf_arch(&self) -> &'static str;

    /// The config.json `architectures[0]` classes it reads; the first is what `model export-hf`
    /// writes.
    fn hf_classes(&self) -> &'static [&'static str];

    /// The config.json `model_type` values it reads when `architectures` is absent; the first
    /// is what `model export-hf` writes.
    fn hf_model_types(&self) -> &'static [&'static str];

    /// The config of a GGUF file, every `{arch}.` key implemented or refused by name.
    fn config_from_gguf(&self, g: &Gguf) -> Result<Config, ModelError>;

    /// The config of a Hugging Face config.json, every key that changes the model implemented
    /// or refused by name.
    fn config_from_hf(&self, json: &HfJson) -> Result<Config, ModelError>;

    /// The tensor namings its GGUF files use. A file is read under the first whose first q
    /// projection it holds (phi3: q/k/v fused or apart) and written under the first.
    fn gguf_namings(&self) -> &'static [Naming] {
        &[llama::gguf_name]
    }

    /// Its Hugging Face tensor names. `NAME[slot]` addresses rows of a fused tensor, cut out by
    /// the family's view and stacked in `Part` order when written.
    fn hf_naming(&self) -> Naming {
        llama::hf_name
    }

    /// Tensors its GGUF config reader takes besides the block's weights (rope factors).
    fn gguf_extra_tensors(&self) -> &'static [&'static str] {
        &[]
    }

    /// A GGUF file's tensors as the block reads them.
    fn gguf_view<'a>(&self, file: &'a dyn TensorFile, _cfg: &Config) -> Box<dyn TensorFile + 'a> {
        Box::new(file)
    }

    /// A Hugging Face checkpoint's tensors as the block reads them.
    fn hf_view<'a>(&self, file: &'a dyn TensorFile, _cfg: &Config) -> Box<dyn TensorFile + 'a> {
        Box::new(file)
    }

    /// A block weight, as the block reads it, as the family's Hugging Face checkpoints store it:
    /// the inverse of [`Family::hf_view`], for `model export-hf`. An error says why no
    /// checkpoint can hold it with the same bits.
    fn to_hf(&self, _part: Part, _cfg: &Config, t: RawTensor) -> Result<RawTensor, String> {
        Ok(t)
    }

    /// The shape a Hugging Face checkpoint stores `part` in, given the block's `shape` (Qwen3.5's
    /// convolution: `[channels, 1, taps]`); the data is the same.
    fn hf_shape(&self, _part: Part, shape: Vec<usize>) -> Vec<usize> {
        shape
    }

    /// How a Hugging Face checkpoint of the family lays out the tensor holding `parts` (each
    /// with its shape as the block reads it, in `Transformer::parts` order), when not as their
    /// rows stacked (gpt-oss's fused experts); `None` for stacked rows.
    fn hf_layout(&self, _parts: &[(Part, Vec<usize>)]) -> Option<StoredLayout> {
        None
    }

    /// config.json's family keys for `cfg`, beside the ones every family shares
    /// (`format::hf_export`). The export reads the file back with [`Family::config_from_hf`]
    /// and refuses it unless it gives `cfg` again.
    fn hf_config(&self, _cfg: &Config, _json: &mut Map<String, Value>) {}

    /// GGUF metadata a writer adds for `cfg` beside the keys `Config` says directly
    /// (`dev::gguf_write::config_metadata`), as convert_hf_to_gguf writes it.
    /// Scalars (u32, i32, f32, bool or string), and arrays of i32 or of bool.
    fn gguf_metadata(&self, _cfg: &Config) -> Vec<(String, gguf::Value)> {
        Vec::new()
    }

    /// The tiny random-weight checkpoints of its config.json layout that the tests write
    /// (`dev::fixtures`).
    fn fixtures(&self) -> Vec<crate::model::dev::fixtures::Fixture> {
        Vec::new()
    }

    /// The random-weight GGUF files at its real models' shapes that llama.cpp scores for the
    /// family goldens (`dev::family_files`).
    fn family_files(&self) -> Vec<crate::model::dev::family_files::FamilyFile> {
        Vec::new()
    }
}

/// A Hugging Face tensor of several block weights in a layout of its own ([`Family::hf_layout`]):
/// its shape, and the groups of parts whose data, each group arranged by `arrange` (the parts
/// in the group's order, as [`Family::to_hf`] gives them), follow one another in the file.
pub struct StoredLayout {
    pub shape: Vec<usize>,
    pub groups: Vec<Vec<Part>>,
    pub arrange: fn(&[RawTensor]) -> Vec<f32>,
}

/// The families a command knows: [`FAMILIES`], or a library user's own list.
#[derive(Clone, Copy)]
pub struct Families(pub &'static [&'static dyn Family]);

/// Every built-in family, one line each.
pub const FAMILIES: Families = Families(&[
    &llama::Llama,
    &qwen2::Qwen2,
    &qwen3::Qwen3,
    &phi3::Phi3,
    &gemma2::Gemma2,
    &gemma3::Gemma3,
    &gemma4::Gemma4,
    &smollm3::SmolLm3,
    &olmo2::Olmo2,
    &mistral3::Mistral3,
    &qwen3moe::Qwen3Moe,
    &gpt_oss::GptOss,
    &qwen35::Qwen35,
]);

impl Families {
    /// The family of a GGUF file, by `general.architecture`.
    pub fn of_gguf(&self, g: &Gguf) -> Result<&'static dyn Family, ModelError> {
        let arch = g.architecture()?;
        self.by_arch(arch)
            .ok_or_else(|| ModelError::UnknownArchitecture {
                path: g.path().to_path_buf(),
                arch: arch.to_string(),
                supported: self.gguf_names(),
            })
    }

    /// The family whose models carry `Config::arch == arch`.
    pub fn by_arch(&self, arch: &str) -> Option<&'static dyn Family> {
        self.0.iter().copied().find(|f| f.gguf_arch() == arch)
    }

    /// The family of a config.json: `architectures[0]`, else `model_type`.
    pub fn of_hf(&self, json: &HfJson) -> Result<&'static dyn Family, ModelError> {
        let class = json
            .get("architectures")
            .and_then(|a| a.get(0))
            .and_then(|a| a.as_str());
        let found = match class {
            Some(c) => self.0.iter().find(|f| f.hf_classes().contains(&c)),
            None => {
                let ty = json.get("model_type").and_then(|m| m.as_str());
                self.0
                    .iter()
                    .find(|f| ty.is_some_and(|t| f.hf_model_types().contains(&t)))
            }
        };
        found
            .copied()
            .ok_or_else(|| ModelError::UnknownArchitecture {
                path: json.path.clone(),
                arch: class
                    .or_else(|| json.get("model_type").and_then(|m| m.as_str()))
                    .unwrap_or("")
                    .to_string(),
                supported: self.hf_names(),
            })
    }

    /// The GGUF architectures known, for messages.
    pub fn gguf_names(&self) -> String {
        self.0
            .iter()
            .map(|f| f.gguf_arch())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The config.json classes known, for messages.
    pub fn hf_names(&self) -> String {
        self.0
            .iter()
            .flat_map(|f| f.hf_classes().iter().copied())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The naming a GGUF file of `family` uses: the first whose first q projection it holds.
pub fn gguf_naming(family: &dyn Family, g: &Gguf) -> Naming {
    let namings = family.gguf_namings();
    namings
        .iter()
        .copied()
        .find(|naming| {
            let name = naming(Part::Q(0));
            let stored = name.split_once('[').map_or(name.as_str(), |(n, _)| n);
            g.tensor_info(stored).is_some()
        })
        .unwrap_or(namings[0])
}
