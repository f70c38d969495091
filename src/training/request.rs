//! What `catdog train` was asked for: the folder, whether to resume, and the flags given, as a
//! change to a run's settings. A new run makes that change to the defaults; a resumed run
//! checks that it changes nothing of its checkpoint's settings.

use std::path::PathBuf;

use anyhow::Result;

use super::checkpoint;
use super::resume::resumed_settings;
use super::settings::{DEMO_OUT, PHOTOS_OUT, TrainOptions};
use crate::model::TrainSettings;

/// `catdog train`'s request.
pub(crate) struct TrainRequest<'a> {
    /// `--out`; `None`: [`TrainRequest::out`] picks the folder.
    pub out: Option<PathBuf>,
    pub resume: bool,
    /// Sets, on a run's settings, each one whose flag was given, and no other.
    pub flags: &'a dyn Fn(&mut TrainSettings),
}

impl TrainRequest<'_> {
    /// The model folder: `--out`, or else `models/catdog` for photos and `models/demo` for the
    /// speed demo on generated pictures, so that the demo never replaces the model `predict`
    /// uses by default. `--resume` without `--out` continues whichever of the two holds an
    /// unfinished run (`models/catdog` where both or neither do).
    pub fn out(&self) -> PathBuf {
        if let Some(out) = &self.out {
            return out.clone();
        }
        let photos = PathBuf::from(PHOTOS_OUT);
        let demo = PathBuf::from(DEMO_OUT);
        if self.resume {
            let unfinished = |out: &PathBuf| {
                checkpoint::read_state(out)
                    .ok()
                    .flatten()
                    .is_some_and(|state| !state.finished())
            };
            return match !unfinished(&photos) && unfinished(&demo) {
                true => demo,
                false => photos,
            };
        }
        match self.new_run().data.is_some() {
            true => photos,
            false => demo,
        }
    }

    /// A new run's settings: the defaults of the network asked for (its own image size unless
    /// `--image-size` says otherwise), with every flag given.
    pub(crate) fn new_run(&self) -> TrainSettings {
        let mut asked = TrainSettings::default();
        (self.flags)(&mut asked);
        let mut settings = TrainSettings::for_network(asked.network);
        (self.flags)(&mut settings);
        settings
    }

    /// The options to train with, checked: a new run's, or with `resume` the settings of the
    /// run checkpointed in the folder, which no flag given may change.
    pub fn options(&self) -> Result<TrainOptions> {
        let out = self.out();
        let settings = match self.resume {
            true => resumed_settings(self.flags, &out)?,
            false => self.new_run(),
        };
        let options = TrainOptions {
            settings,
            out,
            resume: self.resume,
        };
        options.check()?;
        Ok(options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::NetworkKind;

    #[test]
    fn each_network_trains_at_its_own_size_unless_told() {
        let run = |network: Option<NetworkKind>, image_size: Option<u32>| {
            let flags = |settings: &mut TrainSettings| {
                if let Some(network) = network {
                    settings.network = network;
                }
                if let Some(image_size) = image_size {
                    settings.image_size = image_size;
                }
            };
            let request = TrainRequest {
                out: None,
                resume: false,
                flags: &flags,
            };
            let settings = request.new_run();
            (settings.network, settings.image_size)
        };
        assert_eq!(run(None, None), (NetworkKind::SmallCnn, 64));
        let resnet = Some(NetworkKind::ResNet18);
        assert_eq!(run(resnet, None), (NetworkKind::ResNet18, 224));
        assert_eq!(run(resnet, Some(96)), (NetworkKind::ResNet18, 96));
    }

    /// `--network efficientnet-lite0` starts from ImageNet's weights, and `--pretrained
    /// false` from random ones.
    #[test]
    fn efficientnet_lite0_is_pretrained_unless_told() {
        let pretrained = |flag: Option<bool>| {
            let flags = |settings: &mut TrainSettings| {
                settings.network = NetworkKind::EfficientNetLite0;
                if let Some(pretrained) = flag {
                    settings.pretrained = pretrained;
                }
            };
            let request = TrainRequest {
                out: None,
                resume: false,
                flags: &flags,
            };
            request.new_run().pretrained
        };
        assert!(pretrained(None));
        assert!(!pretrained(Some(false)));
    }
}
