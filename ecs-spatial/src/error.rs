//! The error types of point encoding and grid building.

use std::fmt;

/// Why a coordinate, key or quantized value could not be encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EncodeError {
    /// The input was NaN or infinite.
    NotFinite,
    /// The cell or quantized coordinate falls outside the encodable range
    /// (for cell keys: `CELL_MIN..=CELL_MAX` per axis).
    OutOfRange,
    /// A raw key had bits set outside the 63 bits a key uses.
    InvalidKey,
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::NotFinite => f.write_str("coordinate is NaN or infinite"),
            EncodeError::OutOfRange => f.write_str("coordinate is outside the encodable range"),
            EncodeError::InvalidKey => f.write_str("raw key has bits set above bit 62"),
        }
    }
}

impl std::error::Error for EncodeError {}

/// Why an [`EncodingConfig`](crate::EncodingConfig) was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConfigError {
    /// The origin has a NaN or infinite component.
    NonFiniteOrigin,
    /// The cell size is not a finite number greater than zero.
    InvalidCellSize,
    /// The quantization unit is not a finite number greater than zero.
    InvalidUnit,
    /// Two configs differ, so data encoded with one cannot be read with the other.
    Mismatch(ConfigField),
}

/// The field in which two encoding configs differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConfigField {
    /// `EncodingConfig::version`.
    Version,
    /// `EncodingConfig::origin`.
    Origin,
    /// `EncodingConfig::cell_size`.
    CellSize,
    /// `EncodingConfig::unit`.
    Unit,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::NonFiniteOrigin => f.write_str("origin is NaN or infinite"),
            ConfigError::InvalidCellSize => f.write_str("cell size must be finite and > 0"),
            ConfigError::InvalidUnit => f.write_str("quantization unit must be finite and > 0"),
            ConfigError::Mismatch(field) => write!(f, "encoding configs differ in {field:?}"),
        }
    }
}

impl std::error::Error for ConfigError {}

/// A batch operation failed on one element of its input slice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BatchError {
    /// Index of the first element that failed.
    pub index: usize,
    /// What went wrong with it.
    pub error: EncodeError,
}

impl fmt::Display for BatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "element {}: {}", self.index, self.error)
    }
}

impl std::error::Error for BatchError {}

/// Why a [`SparseGrid`](crate::SparseGrid) could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GridError {
    /// The id and position slices have different lengths.
    LengthMismatch {
        /// Length of the id slice.
        ids: usize,
        /// Length of the position slice.
        positions: usize,
    },
    /// More points than a `u32` index can address.
    TooManyPoints,
    /// The grid's cell size is not a finite number greater than zero, or its
    /// origin is not finite.
    InvalidConfig,
    /// A position could not be given a cell key.
    InvalidPoint(BatchError),
    /// A sorted slot past the end of the grid, or listed twice in one edit.
    SlotOutOfRange {
        /// The slot.
        slot: usize,
        /// Points in the grid.
        len: usize,
    },
    /// A position given for an edit lies in another cell than the edit says
    /// (`slot` is the sorted slot, or the index in the inserted list).
    CellMismatch {
        /// The slot or index.
        slot: usize,
    },
}

impl fmt::Display for GridError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GridError::LengthMismatch { ids, positions } => {
                write!(f, "{ids} ids but {positions} positions")
            }
            GridError::TooManyPoints => f.write_str("more than u32::MAX points"),
            GridError::InvalidConfig => f.write_str("grid cell size or origin is invalid"),
            GridError::InvalidPoint(e) => write!(f, "position {e}"),
            GridError::SlotOutOfRange { slot, len } => {
                write!(f, "slot {slot} is past the end of a grid of {len} points or listed twice")
            }
            GridError::CellMismatch { slot } => write!(f, "edit {slot}: the position lies in another cell"),
        }
    }
}

impl std::error::Error for GridError {}
