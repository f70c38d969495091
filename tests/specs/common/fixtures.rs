//! What the tests make before they check something (pictures, photo folders, models trained
//! for an epoch, the files of a model folder), and the command lines several of them share.

use std::fs;
use std::path::{Path, PathBuf};

use super::command::{Catdog, catdog};

/// The project folder.
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A file of `tests/fixtures`.
pub fn fixture(name: &str) -> PathBuf {
    root().join("tests/fixtures").join(name)
}

/// `p` as the text catdog prints it.
pub fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `catdog synth`: `count` generated pictures of `size` px in `cat/` and `dog/` under `out`.
pub fn synth(out: &Path, count: u32, size: u32) {
    catdog()
        .synth()
        .out(out)
        .args(["--count", &count.to_string(), "--size", &size.to_string()])
        .succeeds();
}

/// `catdog train` of the photos in `data` into `model` for one epoch on flex at `px` px.
pub fn train_one_epoch(data: &Path, model: &Path, px: u32) -> Catdog {
    catdog()
        .train()
        .data(data)
        .flex()
        .epochs(1)
        .size(px)
        .out(model)
}

/// `catdog train` of 40 generated pictures into `model` for one epoch on flex at 16 px.
pub fn train_one_epoch_generated(model: &Path) -> Catdog {
    catdog()
        .train()
        .flex()
        .generated(40)
        .size(16)
        .epochs(1)
        .out(model)
}

/// `catdog eval` of the photos in `data` with the model in `model`, on flex.
pub fn eval(model: &Path, data: &Path) -> Catdog {
    catdog().eval().model(model).data(data).flex()
}

/// A small trained model folder, and a photo to predict.
pub fn trained_model(dir: &Path) -> (PathBuf, PathBuf) {
    let model = dir.join("model");
    let photos = dir.join("photos");
    synth(&photos, 4, 16);
    train_one_epoch_generated(&model).succeeds();
    (model, photos.join("cat/00000.png"))
}

/// Copies the files of the folder `from` into a new folder `to`.
pub fn copy_folder(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

/// A black picture (64 px), unlike any photo of a cat or a dog, or any of `synth`'s.
pub fn black_picture(file: &Path) {
    image::RgbImage::new(64, 64).save(file).unwrap();
}

/// The weights file of the model folder `model`, as its `catdog.json` names it.
pub fn weights_file(model: &Path) -> PathBuf {
    let info: serde_json::Value =
        serde_json::from_slice(&fs::read(model.join("catdog.json")).unwrap()).unwrap();
    model.join(info["weights_file"].as_str().unwrap())
}

/// The safetensors header of the model in `model`, which names each tensor's dtype: after an
/// 8-byte length, that many bytes of JSON.
pub fn weights_header(model: &Path) -> String {
    let weights = fs::read(weights_file(model)).unwrap();
    let length = u64::from_le_bytes(weights[..8].try_into().unwrap()) as usize;
    String::from_utf8(weights[8..8 + length].to_vec()).unwrap()
}

/// Writes `count` striped pictures of `size` px into `out/cat` and `out/dog`, half of each:
/// cats' stripes run across, dogs' up and down, in two random colours of strong contrast, at
/// a random phase, with noise. A set the network learns in an epoch or two, where the drawn
/// faces of `catdog synth` take many epochs of larger pictures: cheap enough for lavapipe.
pub fn striped_pictures(out: &Path, count: usize, size: u32) {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    for (class, across) in [("cat", true), ("dog", false)] {
        fs::create_dir_all(out.join(class)).unwrap();
        for index in 0..count / 2 {
            let first: [u8; 3] = rng.random();
            let second = first.map(|c| c.wrapping_add(rng.random_range(88..=168)));
            let phase: u32 = rng.random_range(0..4);
            let picture = image::RgbImage::from_fn(size, size, |x, y| {
                let along = if across { y } else { x } + phase;
                let colour = if (along / 2).is_multiple_of(2) {
                    first
                } else {
                    second
                };
                image::Rgb(colour.map(|c| c.saturating_add_signed(rng.random_range(-30..=30))))
            });
            picture
                .save(out.join(class).join(format!("{index:05}.png")))
                .unwrap();
        }
    }
}
