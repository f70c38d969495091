//! The library's choices as clap values, named and explained where the library defines them.

use clap::ValueEnum;
use clap::builder::PossibleValue;

use crate::data::Augmentation;
use crate::device::{BackendChoice, Precision};
use crate::model::NetworkKind;
use crate::training::Schedule;

impl ValueEnum for BackendChoice {
    fn value_variants<'a>() -> &'a [Self] {
        &BackendChoice::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.name()).help(self.help()))
    }
}

impl ValueEnum for Schedule {
    fn value_variants<'a>() -> &'a [Self] {
        &Schedule::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.name()).help(self.help()))
    }
}

impl ValueEnum for Precision {
    fn value_variants<'a>() -> &'a [Self] {
        &Precision::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.name()).help(self.help()))
    }
}

impl ValueEnum for Augmentation {
    fn value_variants<'a>() -> &'a [Self] {
        &Augmentation::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.name()).help(self.help()))
    }
}

impl ValueEnum for NetworkKind {
    fn value_variants<'a>() -> &'a [Self] {
        &NetworkKind::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.name()).help(self.help()))
    }
}
