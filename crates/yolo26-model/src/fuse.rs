//! BatchNorm folding for inference (ultralytics `model.fuse()` without removing a head): every `Conv`'s norm is
//! folded into its convolution.

use burn::prelude::*;

use crate::model::Yolo26;
use crate::nn::attention::{Attention, C2Psa, Ffn, PsaBlock};
use crate::nn::blocks::{Bottleneck, BottleneckPsa, C3k, C3k2, C3k2Block, Sppf};
use crate::nn::conv::Conv;
use crate::nn::head::{BoxBranch, ClsBranch, Detect, DwSep};

/// Folds every BatchNorm of a module into the preceding convolution.
pub trait FoldBn: Sized {
    /// The module with every `Conv`'s BatchNorm folded into its convolution (outputs unchanged up to rounding).
    fn fold_bn(self) -> Self;
}

impl<B: Backend> FoldBn for Conv<B> {
    fn fold_bn(self) -> Self {
        Conv::fold_bn(self)
    }
}

impl<T: FoldBn> FoldBn for Vec<T> {
    fn fold_bn(self) -> Self {
        self.into_iter().map(FoldBn::fold_bn).collect()
    }
}

macro_rules! fold_fields {
    ($ty:ident { $($f:ident),* }) => {
        impl<B: Backend> FoldBn for $ty<B> {
            fn fold_bn(mut self) -> Self {
                $(self.$f = self.$f.fold_bn();)*
                self
            }
        }
    };
}

fold_fields!(Bottleneck { cv1, cv2 });
fold_fields!(C3k { cv1, cv2, cv3, m });
fold_fields!(BottleneckPsa { i0, i1 });
fold_fields!(C3k2 { cv1, cv2, m });
fold_fields!(Sppf { cv1, cv2 });
fold_fields!(Attention { qkv, proj, pe });
fold_fields!(Ffn { i0, i1 });
fold_fields!(PsaBlock { attn, ffn });
fold_fields!(C2Psa { cv1, cv2, m });
fold_fields!(BoxBranch { i0, i1 });
fold_fields!(DwSep { i0, i1 });
fold_fields!(ClsBranch { i0, i1 });
fold_fields!(Detect { cv2, cv3, one2one_cv2, one2one_cv3 });
fold_fields!(Yolo26 {
    layer0,
    layer1,
    layer2,
    layer3,
    layer4,
    layer5,
    layer6,
    layer7,
    layer8,
    layer9,
    layer10,
    layer13,
    layer16,
    layer17,
    layer19,
    layer20,
    layer22,
    layer23
});

impl<B: Backend> FoldBn for C3k2Block<B> {
    fn fold_bn(self) -> Self {
        match self {
            C3k2Block::Bottleneck(b) => C3k2Block::Bottleneck(b.fold_bn()),
            C3k2Block::C3k(b) => C3k2Block::C3k(b.fold_bn()),
            C3k2Block::Attn(b) => C3k2Block::Attn(b.fold_bn()),
        }
    }
}
