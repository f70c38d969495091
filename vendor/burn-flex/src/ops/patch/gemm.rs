//! The one matrix product the convolution kernels use: gemm's, with its safety checks.

use super::Element;

/// A row-major matrix view: data and (row, column) strides.
#[derive(Clone, Copy)]
pub(super) struct Matrix<'a, T> {
    pub data: &'a [T],
    pub row_stride: usize,
    pub col_stride: usize,
}

impl<'a, T> Matrix<'a, T> {
    /// Row-major, its rows `columns` apart; with `data` starting inside a row, a block of
    /// columns of a wider matrix.
    pub fn rows(data: &'a [T], columns: usize) -> Self {
        Matrix {
            data,
            row_stride: columns,
            col_stride: 1,
        }
    }
    /// The matrix from its row `row` on.
    pub fn from_row(self, row: usize) -> Self {
        Matrix {
            data: &self.data[row * self.row_stride..],
            ..self
        }
    }
    pub fn transposed(self) -> Self {
        Matrix {
            data: self.data,
            row_stride: self.col_stride,
            col_stride: self.row_stride,
        }
    }
}

/// `dst[m×n] = lhs[m×k] · rhs[k×n]`, or `+=` when `accumulate`; `dst` is row-major.
pub(super) fn gemm<T: Element>(
    [m, n, k]: [usize; 3],
    dst: &mut [T],
    accumulate: bool,
    lhs: Matrix<T>,
    rhs: Matrix<T>,
    parallelism: gemm::Parallelism,
) {
    gemm_strided([m, n, k], dst, [n, 1], accumulate, lhs, rhs, parallelism);
}

/// `dst[m×n] = lhs[m×k] · rhs[k×n]` into memory not yet written, of any (row, column)
/// strides: the `m·n` values at `dst[i·row_stride + j·col_stride]` written, none read, so
/// the caller's output need not be filled first.
pub(super) fn gemm_into_strided<T: Element>(
    [m, n, k]: [usize; 3],
    dst: &mut [core::mem::MaybeUninit<T>],
    [dst_row_stride, dst_col_stride]: [usize; 2],
    lhs: Matrix<T>,
    rhs: Matrix<T>,
    parallelism: gemm::Parallelism,
) {
    if k == 0 {
        // No products: gemm may leave `dst` as it is.
        for i in 0..m {
            for j in 0..n {
                dst[i * dst_row_stride + j * dst_col_stride].write(T::zero());
            }
        }
        return;
    }
    // SAFETY: with `accumulate` false, gemm writes every value of `dst[m×n]` and reads none
    // (gemm takes raw pointers, so no reference to unwritten values is made); the checks in
    // `checked` keep it inside the slice.
    unsafe {
        checked(
            [m, n, k],
            dst.as_mut_ptr() as *mut T,
            dst.len(),
            [dst_row_stride, dst_col_stride],
            false,
            lhs,
            rhs,
            parallelism,
        )
    }
}

/// [`gemm`] into a `dst` of any (row, column) strides. gemm solves a row-major `dst` as
/// `dstᵀ = rhsᵀ · lhsᵀ`, and copies its left operand into panels unless that operand's rows
/// are adjacent in memory (`row_stride` 1, once transposed as the case may be).
#[allow(clippy::too_many_arguments)]
pub(super) fn gemm_strided<T: Element>(
    [m, n, k]: [usize; 3],
    dst: &mut [T],
    [dst_row_stride, dst_col_stride]: [usize; 2],
    accumulate: bool,
    lhs: Matrix<T>,
    rhs: Matrix<T>,
    parallelism: gemm::Parallelism,
) {
    let len = dst.len();
    // SAFETY: `dst` is a slice of written values, `len` long.
    unsafe {
        checked(
            [m, n, k],
            dst.as_mut_ptr(),
            len,
            [dst_row_stride, dst_col_stride],
            accumulate,
            lhs,
            rhs,
            parallelism,
        )
    }
}

/// gemm's call behind the checks that keep it inside `dst` (`len` values from `dst`),
/// `lhs` and `rhs`.
///
/// # Safety
/// `dst` must point to `len` values that may be written; where `accumulate`, they must have
/// been written.
#[allow(clippy::too_many_arguments)]
unsafe fn checked<T: Element>(
    [m, n, k]: [usize; 3],
    dst: *mut T,
    len: usize,
    [dst_row_stride, dst_col_stride]: [usize; 2],
    accumulate: bool,
    lhs: Matrix<T>,
    rhs: Matrix<T>,
    parallelism: gemm::Parallelism,
) {
    let last = |a: Matrix<T>, rows: usize, cols: usize| {
        (rows - 1) * a.row_stride + (cols - 1) * a.col_stride
    };
    if m == 0 || n == 0 {
        return;
    }
    // In bounds, and no two positions on the same value (gemm's threads would race there).
    let dst_last = (m - 1)
        .checked_mul(dst_row_stride)
        .zip((n - 1).checked_mul(dst_col_stride))
        .and_then(|(a, b)| a.checked_add(b));
    assert!(dst_last.is_some_and(|last| last < len));
    let apart = |[inner, outer]: [usize; 2], [len_inner, len_outer]: [usize; 2]| {
        (len_inner == 1 || inner > 0) && (len_outer == 1 || outer > (len_inner - 1) * inner)
    };
    assert!(
        apart([dst_row_stride, dst_col_stride], [m, n])
            || apart([dst_col_stride, dst_row_stride], [n, m])
    );
    assert!(k == 0 || (last(lhs, m, k) < lhs.data.len() && last(rhs, k, n) < rhs.data.len()));
    // SAFETY: the assertions above keep every index gemm computes inside the slices, and
    // the caller vouches for `dst`.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst,
            dst_col_stride as isize,
            dst_row_stride as isize,
            accumulate,
            lhs.data.as_ptr(),
            lhs.col_stride as isize,
            lhs.row_stride as isize,
            rhs.data.as_ptr(),
            rhs.col_stride as isize,
            rhs.row_stride as isize,
            T::one(),
            T::one(),
            false,
            false,
            false,
            parallelism,
        );
    }
}
