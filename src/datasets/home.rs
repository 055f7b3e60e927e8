//! Where the datasets are: one folder, found the same way by every command that reads a dataset
//! file, by the test suite, and by build.rs (which compiles this file too, to mark the tests
//! whose datasets are absent as ignored). In order:
//!
//! 1. `--datasets DIR`, where a command takes it;
//! 2. `$DELTALOGIC_DATASETS`;
//! 3. `../shared/datasets` beside the checkout this binary was built from, if it is there;
//! 4. `$XDG_DATA_HOME/deltalogic/datasets` (`~/.local/share/deltalogic/datasets`).
//!
//! The checkout is the source folder cargo compiled, recorded in the binary, never the current
//! folder: from a clone, `cargo run` and a binary installed with `cargo install --path .` find
//! the datasets beside that clone while it is there, whatever folder they run in. A binary built
//! from a package without a checkout (a crates.io install) or moved to another machine has
//! nothing there and uses the XDG folder.
//!
//! [`DATASETS`] says what each dataset is and where it comes from, with the sha256 of every
//! file (`../shared/datasets/MANIFEST.files.json`; its READMEs and licence files are left out,
//! being no part of what is read). `datasets::versions` compares a folder against it.
//!
//! Only `std` here: build.rs compiles this file on its own.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The variable naming the datasets folder.
pub const VAR: &str = "DELTALOGIC_DATASETS";

/// The source folder this binary was compiled from.
const CHECKOUT: &str = env!("CARGO_MANIFEST_DIR");

/// One dataset: its folder inside the datasets folder, where its files come from, and each
/// file's sha256.
#[derive(Debug)]
pub struct Dataset {
    /// Its folder inside the datasets folder; also its name in messages and in the tests'
    /// `dataset_missing` cfg.
    pub folder: &'static str,
    pub title: &'static str,
    /// The public GitHub repository (`owner/name`) the files were copied from, at `commit`,
    /// and the folder of that repository they are in (empty: its root).
    pub repository: &'static str,
    pub commit: &'static str,
    pub path: &'static str,
    pub licence: &'static str,
    /// Each file's path inside `folder` (the same path inside `path` of the repository) and
    /// its sha256.
    pub files: &'static [(&'static str, &'static str)],
}

impl Dataset {
    /// The dataset whose folder is `folder`.
    pub fn named(folder: &str) -> Option<&'static Dataset> {
        DATASETS.iter().find(|d| d.folder == folder)
    }

    /// Whether every file of the dataset is in `home` (not whether they are this version:
    /// `datasets::versions` reads them).
    pub fn present(&self, home: &Path) -> bool {
        let dir = home.join(self.folder);
        self.files.iter().all(|(file, _)| dir.join(file).is_file())
    }

    /// The repository's folder at the commit, on GitHub.
    pub fn url(&self) -> String {
        let url = format!(
            "https://github.com/{}/tree/{}",
            self.repository, self.commit
        );
        if self.path.is_empty() {
            url
        } else {
            format!("{url}/{}", self.path)
        }
    }
}

/// How the datasets folder was chosen (the module's list).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chosen {
    Flag,
    Variable,
    BesideCheckout,
    Xdg,
}

impl Chosen {
    /// A short name, for JSON.
    pub fn key(self) -> &'static str {
        match self {
            Chosen::Flag => "flag",
            Chosen::Variable => "variable",
            Chosen::BesideCheckout => "beside-checkout",
            Chosen::Xdg => "xdg",
        }
    }

    /// Why this folder, in words.
    pub fn reason(self) -> String {
        match self {
            Chosen::Flag => "given by --datasets".to_string(),
            Chosen::Variable => format!("given by {VAR}"),
            Chosen::BesideCheckout => {
                format!("../shared/datasets beside the checkout this binary was built from ({CHECKOUT})")
            }
            Chosen::Xdg => format!(
                "the XDG data folder: neither --datasets nor {VAR} is given and there is no \
                 ../shared/datasets beside the checkout this binary was built from ({CHECKOUT})"
            ),
        }
    }
}

/// The datasets folder and why it is the one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Home {
    pub dir: PathBuf,
    pub chosen: Chosen,
}

/// No datasets folder can be named: nothing given, nothing beside the checkout, and neither
/// `XDG_DATA_HOME` nor `HOME` is set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoHome;

impl std::fmt::Display for NoHome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "no datasets folder: neither --datasets nor {VAR} is given, there is no \
             ../shared/datasets beside the checkout this binary was built from ({CHECKOUT}), and \
             neither XDG_DATA_HOME nor HOME is set"
        )
    }
}

impl std::error::Error for NoHome {}

/// The datasets folder, from `flag` (a command's `--datasets`) and the environment.
pub fn find(flag: Option<&Path>) -> Result<Home, NoHome> {
    choose(
        flag,
        std::env::var_os(VAR),
        &beside_checkout(),
        std::env::var_os("XDG_DATA_HOME"),
        std::env::var_os("HOME"),
    )
}

/// `../shared/datasets` beside the checkout this binary was built from.
pub fn beside_checkout() -> PathBuf {
    Path::new(CHECKOUT).join("../shared/datasets")
}

/// The module's order, on given values: an empty variable counts as unset, and a relative
/// `XDG_DATA_HOME` is ignored as the XDG specification says.
fn choose(
    flag: Option<&Path>,
    var: Option<OsString>,
    checkout: &Path,
    xdg: Option<OsString>,
    home: Option<OsString>,
) -> Result<Home, NoHome> {
    let given = |v: Option<OsString>| v.filter(|s| !s.is_empty()).map(PathBuf::from);
    let at = |dir: PathBuf, chosen| Ok(Home { dir, chosen });
    if let Some(dir) = flag {
        return at(dir.to_path_buf(), Chosen::Flag);
    }
    if let Some(dir) = given(var) {
        return at(dir, Chosen::Variable);
    }
    if checkout.is_dir() {
        return at(checkout.to_path_buf(), Chosen::BesideCheckout);
    }
    let data = match given(xdg).filter(|p| p.is_absolute()) {
        Some(dir) => dir,
        None => given(home).ok_or(NoHome)?.join(".local/share"),
    };
    at(data.join("deltalogic/datasets"), Chosen::Xdg)
}

/// Every dataset deltalogic knows, as `../shared/datasets/MANIFEST.md` describes it (each data
/// file's sum checked against the repository at the commit, in a copy of it; see the README's
/// "Before you start").
pub const DATASETS: &[Dataset] = &[
    Dataset {
        folder: "folio/v0.0",
        title: "FOLIO v0.0",
        repository: "Yale-LILY/FOLIO",
        commit: "266c382ca2173f56338f407fff2fd58b9fc1d0ef",
        path: "data/v0.0",
        licence: "CC BY-SA 4.0",
        files: &[
            (
                "folio-train.jsonl",
                "008d34b750d31fa7f014e953228adf4db81ec34bbda9e7f67c96c60438d1e6b2",
            ),
            (
                "folio-train.txt",
                "850f6b933d3e73c9152e3eccf56cf102d1200d7387df13efef8a6a44306676a1",
            ),
            (
                "folio-validation.jsonl",
                "6922c988ef10987bd6545568ee8e63e897af80994591fa20539767da58f8e3d1",
            ),
            (
                "folio-validation.txt",
                "9d3f44eab28c880b90b730a4b6cb49d5101bc6b14fa2f45a04ec3c796743569e",
            ),
        ],
    },
    Dataset {
        folder: "folio/logic-lm",
        title: "FOLIO as Logic-LM gives it",
        repository: "teacherpeterpan/Logic-LLM",
        commit: "eb95e5abef2433294688066f9092a23cf96e8545",
        path: "data/FOLIO",
        licence: "code MIT; content FOLIO, CC BY-SA 4.0",
        files: &[
            (
                "dev.json",
                "f1752092c95adaf535da03552f8e633fa031ebd90b27a9f780c5427ca1d14ccb",
            ),
            (
                "train.json",
                "bdbb8cdf153224cd7042dba4ed34dddee041eb8bd6a6fc47344a5cc6aeab8fef",
            ),
        ],
    },
    Dataset {
        folder: "proofwriter/logic-lm",
        title: "ProofWriter (open world, depth 5) as Logic-LM gives it",
        repository: "teacherpeterpan/Logic-LLM",
        commit: "eb95e5abef2433294688066f9092a23cf96e8545",
        path: "data/ProofWriter",
        licence: "code MIT; ProofWriter CC BY",
        files: &[
            (
                "dev.json",
                "e792b54981065c91d4aecc908be17ce9a730f2327548e6fa36717ef01e472240",
            ),
            (
                "test.json",
                "ecb47ebdada00671e029bcd7a2fb41bfecf2a216f53b075b77816e46d6615698",
            ),
            (
                "train.json",
                "e1dc43105dbdddb9a73c7cfd026a90ced8d69850dd97aaf7bcabbfcd2f4b9b89",
            ),
        ],
    },
    Dataset {
        folder: "ruletaker_cwa",
        title: "RuleTaker V2020.2.4 (closed world)",
        repository: "IBM/Neural_Unification_for_Logic_Reasoning_over_Language",
        commit: "a4902f704239534dec1881a913b7b48fc89ec2db",
        path: "rule-reasoning-dataset-V2020.2.4",
        licence: "code Apache-2.0; data CC BY (AllenAI)",
        files: &[
            (
                "depth-0/dev.jsonl",
                "f3bfb017c5c215747becb16ed91e85b62af9b7dc62d95e0baec17998b8bcfcb8",
            ),
            (
                "depth-1/dev.jsonl",
                "e96feedbfb0f0426ec175868ea703ef550ca98990803b63c31fbe21fe9c1a77b",
            ),
            (
                "depth-1/test.jsonl",
                "432c477d9f720fae24e45e99b3deec45bd5e885bf3c5dd9082e25fe32c844876",
            ),
            (
                "depth-2/dev.jsonl",
                "a6cc266cc54a0bb1154c5dd814484e26ab54f31ae6a2fef4a343ce62cc5c9712",
            ),
            (
                "depth-2/test.jsonl",
                "192adc0b3a1c44e9dbc66b24af92a8c766dabde2880e02ccb738d88f9e084ee3",
            ),
            (
                "depth-3/dev.jsonl",
                "7765923c500b0aaec6bcd5086f00f813ea3f65606a186e9a56a3f81c015ae042",
            ),
            (
                "depth-3/test.jsonl",
                "93b312628b38b001bf4a81c9b0773d3a0bc18a17c378b4754e9df5c7710ddb72",
            ),
            (
                "depth-5/dev.jsonl",
                "1738f80fbc549d7a6f4a29dcb44947634dfeb6e4816f07d1841bbc10769f3910",
            ),
            (
                "depth-5/test-xtra.jsonl",
                "635f3e8dcb50c3a30918b31e88aa52f1b8574ce30b2d0f57943201e2b5abff55",
            ),
            (
                "depth-5/test.jsonl",
                "617e135d0e46d3ceef11f7101f6905207b802fb6b3c1410f52051f899c680174",
            ),
        ],
    },
    Dataset {
        folder: "belief_r",
        title: "Belief-R",
        repository: "HLTCHKUST/belief-revision",
        commit: "901cd09ff975da7ba84f7b8f3f4c8b93de2eb3b1",
        path: "dataset/belief_r",
        licence: "none stated (no licence file in the repository)",
        files: &[
            (
                "basic_time_t.csv",
                "f7fb76746c7351b5920d8f4aa0d72ac2b1993634ea18771b607fc55dfe29169f",
            ),
            (
                "queries_time_t1.csv",
                "c2746d8542fccdb0cd3e8f35c5b904b3c104e4c7f8c3c79cc14483b6bec52c2d",
            ),
        ],
    },
    Dataset {
        folder: "robustlr/glore_subset",
        title: "RobustLR, GLoRE's first 1000 items",
        repository: "csitfun/GLoRE",
        commit: "8b7bb9cce8122732e1a29dfccaf83670660c8ff2",
        path: "",
        licence: "RobustLR MIT; none stated by GLoRE",
        files: &[(
            "robustlr_1k.jsonl",
            "a703d5a9e9f4cd5f0f9a425da5d352c52d8997f8de386ab6d718d3d8d65c2a16",
        )],
    },
    Dataset {
        folder: "clomo",
        title: "CLoMo",
        repository: "Eleanor-H/CLOMO",
        commit: "9259ec19405cff8df1e9305b21d862c1e0d8bc58",
        path: "",
        licence: "none stated (no licence file in the repository)",
        files: &[
            (
                "data/cot_dev.json",
                "4cf79b2a5d3a087b4aa336068bb03270a5e746b45a66e1a7586a9ca6834b3197",
            ),
            (
                "data/cot_test.json",
                "b663c960c981b2b6e6b308f4b5bc62949a8e564e5d3fe5c96955f608357f7fca",
            ),
            (
                "data/cot_train.json",
                "f8217f0def237f1cac747e194946a73e635c71f43523d75f73b5f40cbf9d1176",
            ),
            (
                "data/few_dev.json",
                "6a5379acdaa0197420d3aa38f84b015f290c5fd8ba373ee169c5eb3ef707bcee",
            ),
            (
                "data/few_test.json",
                "22b56b6bc1ada33702bfe45c1eb3565c2a12dfd24363a7a096d3f3401a01fb43",
            ),
            (
                "data/few_train.json",
                "23de5df3e40def018b4c8669760bbbd8e09ae9063fe124ecb237bf6e9b97bfdb",
            ),
            (
                "data/type_picked/cot_ona_test.json",
                "d96fd25ed2d1e0ce3160be7292e79b020f050f97a71a169dced05baffa6e62d2",
            ),
            (
                "data/type_picked/cot_os_test.json",
                "6c6eff69c5e2938a81e94851821d52077bb0f67f8d5b1399398fca280b5ff8d1",
            ),
            (
                "data/type_picked/cot_osa_test.json",
                "47841738d7a77283c1c55fae57736bf8673c6b7da31ef0fd658aa65b34ae6675",
            ),
            (
                "data/type_picked/cot_ow_test.json",
                "e004febf99a4d197b49e5867e2676cc4db2d1d02238334b19b54eacea129c8bb",
            ),
            (
                "data/type_picked/few_ona_test.json",
                "3067fb8ff0095836315932bfcbea37d2d02d89bc6176e068cfcde5918a001ccf",
            ),
            (
                "data/type_picked/few_os_test.json",
                "39dbefabd76c79ca265ddcecf96aa481ad66920e3175e84b7e8a6ead3555d1d3",
            ),
            (
                "data/type_picked/few_osa_test.json",
                "d2e19057fbc2179fa44e3c4222da91d34c311408304d846b6d967e374018eb34",
            ),
            (
                "data/type_picked/few_ow_test.json",
                "c554ff2790f19e7e0648a883c80255629c2fc91be32de249baf9c9c08c251376",
            ),
            (
                "data/type_picked/zero_ona_test.json",
                "6749f0093c1ac72b51df6d56a623782ab00b78e0ea6ef63c91fc882b2a65cdd0",
            ),
            (
                "data/type_picked/zero_os_test.json",
                "68d4bf0337e9e290570b561a57f32e9362730c5a872d8ba21c9b6c3fadff62b2",
            ),
            (
                "data/type_picked/zero_osa_test.json",
                "c8287cbba6e2f83a479f2c2dc3c538642e082640f15cb165f6ced894d44290e1",
            ),
            (
                "data/type_picked/zero_ow_test.json",
                "9629026f6978ff6f1345cc6bd4d98dfb1c7abe2332e2c46d3927496cec5c46b8",
            ),
            (
                "data/zero_dev.json",
                "a66529f0b1a67442837de5533ae2e4ec9dd761f4a4787684b5ac1f1c56de4d63",
            ),
            (
                "data/zero_test.json",
                "bd014f2a0c02f8314f90f7d8391e6ae10fa17517eeeb87679d00a0367ec01bbd",
            ),
            (
                "data/zero_train.json",
                "50fe6f817a468c94afdef6f5dd3782f2e3bb4153688434cab1334711c02737e2",
            ),
            (
                "output_template/template_pred.json",
                "f73bcb463af7e26e1538dd6804cb80eaa7ae5551b60bea4c117f24e1f8d76edb",
            ),
        ],
    },
    Dataset {
        folder: "gsm8k/openai",
        title: "GSM8K",
        repository: "openai/grade-school-math",
        commit: "3101c7d5072418e28b9008a6636bde82a006892c",
        path: "grade_school_math/data",
        licence: "MIT",
        files: &[
            (
                "test.jsonl",
                "3730d312f6e3440559ace48831e51066acaca737f6eabec99bccb9e4b3c39d14",
            ),
            (
                "test_socratic.jsonl",
                "c96673362fa7a699f4836a9b6474a067448f95fe58064727501ee63ba4c3fdb6",
            ),
            (
                "train.jsonl",
                "17f347dc51477c50d4efb83959dbb7c56297aba886e5544ee2aaed3024813465",
            ),
        ],
    },
    Dataset {
        folder: "gsm8k/satlm",
        title: "GSM8K test as SAT-LM gives it",
        repository: "xiye17/SAT-LM",
        commit: "c40c401d9dda3b8980a4d1a36af9fca9b8426ac5",
        path: "data",
        licence: "MIT",
        files: &[(
            "gsm_test.json",
            "d4f6c5121c0351a84560d3dd9cb9917558a8ce6116b69cc4f43c442508b36fbe",
        )],
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    fn os(s: &str) -> Option<OsString> {
        Some(OsString::from(s))
    }

    #[test]
    fn the_first_of_flag_variable_checkout_and_xdg_is_taken() {
        let there = std::env::temp_dir();
        let nowhere = Path::new("/nonexistent/shared/datasets");
        let pick = |flag: Option<&Path>, var, checkout: &Path, xdg, home| {
            choose(flag, var, checkout, xdg, home).map(|h| (h.dir, h.chosen))
        };
        assert_eq!(
            pick(Some(Path::new("d")), os("v"), &there, os("/x"), os("/h")),
            Ok((PathBuf::from("d"), Chosen::Flag))
        );
        assert_eq!(
            pick(None, os("v"), &there, os("/x"), os("/h")),
            Ok((PathBuf::from("v"), Chosen::Variable))
        );
        assert_eq!(
            pick(None, os(""), &there, os("/x"), os("/h")),
            Ok((there.clone(), Chosen::BesideCheckout))
        );
        assert_eq!(
            pick(None, None, nowhere, os("/x"), os("/h")),
            Ok((PathBuf::from("/x/deltalogic/datasets"), Chosen::Xdg))
        );
        // A relative XDG_DATA_HOME is ignored; HOME's .local/share is the XDG default.
        assert_eq!(
            pick(None, None, nowhere, os("rel"), os("/h")),
            Ok((
                PathBuf::from("/h/.local/share/deltalogic/datasets"),
                Chosen::Xdg
            ))
        );
        assert_eq!(pick(None, None, nowhere, None, None), Err(NoHome));
    }

    #[test]
    fn every_dataset_has_its_own_folder_and_well_formed_sums() {
        for d in DATASETS {
            for other in DATASETS {
                let nested = other.folder.starts_with(&format!("{}/", d.folder));
                assert!(!nested, "{} holds {}", d.folder, other.folder);
            }
            assert_eq!(Dataset::named(d.folder).map(|n| n.folder), Some(d.folder));
            assert_eq!(d.commit.len(), 40, "{}", d.folder);
            assert!(!d.files.is_empty(), "{}", d.folder);
            for (file, sum) in d.files {
                let hex = sum.len() == 64 && sum.bytes().all(|b| b.is_ascii_hexdigit());
                assert!(hex, "{}/{file}: {sum}", d.folder);
            }
        }
    }
}
