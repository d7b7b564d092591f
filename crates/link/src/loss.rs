//! Random loss on a link: independent (Bernoulli) or bursty
//! (Gilbert-Elliott), drawn from the run's seeded generator.

use kleinrock_cc::rand::SplitMix64;

/// A loss process. Probabilities are parts per million.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LossModel {
    None,
    /// Each packet is lost independently with probability `ppm`/10^6.
    Bernoulli {
        ppm: u32,
    },
    /// Two states: Good loses with `loss_good_ppm`, Bad with `loss_bad_ppm`;
    /// each packet first moves Good to Bad with `p_ppm`, Bad to Good with
    /// `r_ppm`. Mean burst length is 1/r packets.
    GilbertElliott {
        p_ppm: u32,
        r_ppm: u32,
        loss_good_ppm: u32,
        loss_bad_ppm: u32,
        bad: bool,
    },
    /// Exactly these packets, counted from 0 in the order the link sent
    /// them (for tests and for reproducing a specific loss pattern).
    Indices(Vec<u64>),
}

impl LossModel {
    /// Does the link's `index`-th packet get lost?
    #[inline]
    pub fn drop(&mut self, rng: &mut SplitMix64, index: u64) -> bool {
        match self {
            LossModel::None => false,
            LossModel::Indices(list) => list.binary_search(&index).is_ok(),
            LossModel::Bernoulli { ppm } => rng.chance_ppm(*ppm),
            LossModel::GilbertElliott {
                p_ppm,
                r_ppm,
                loss_good_ppm,
                loss_bad_ppm,
                bad,
            } => {
                let flip = if *bad { *r_ppm } else { *p_ppm };
                if rng.chance_ppm(flip) {
                    *bad = !*bad;
                }
                rng.chance_ppm(if *bad { *loss_bad_ppm } else { *loss_good_ppm })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bernoulli_rate_and_gilbert_elliott_bursts() {
        let mut rng = SplitMix64::new(3);
        let mut b = LossModel::Bernoulli { ppm: 20_000 };
        let lost = (0..100_000).filter(|_| b.drop(&mut rng, 0)).count();
        assert!((1_800..2_200).contains(&lost), "{lost}");

        // Same average loss (p/(p+r) = 2% in Bad, all lost there), in bursts
        // of mean length 1/r = 10.
        let mut ge = LossModel::GilbertElliott {
            p_ppm: 2_041,
            r_ppm: 100_000,
            loss_good_ppm: 0,
            loss_bad_ppm: 1_000_000,
            bad: false,
        };
        let seq: Vec<bool> = (0..200_000).map(|_| ge.drop(&mut rng, 0)).collect();
        let lost = seq.iter().filter(|&&l| l).count();
        let bursts = seq.windows(2).filter(|w| !w[0] && w[1]).count();
        assert!((3_400..4_600).contains(&lost), "{lost}");
        let mean_burst = lost as f64 / bursts as f64;
        assert!((8.0..12.0).contains(&mean_burst), "{mean_burst}");
    }
}
