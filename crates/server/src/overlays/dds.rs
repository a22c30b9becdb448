//! The dds overlay's options: slapd's `dds-*` directives without the prefix.

use canopy_directory::overlay::dds::Config;

/// A duration as slapd writes one for dds: seconds, or `[Nd][Nh][Nm][Ns]` (`1d`, `2h30m`).
fn seconds(key: &str, value: &toml::Value) -> Result<u32, String> {
    let bad = || format!("{key}: expected seconds or a duration such as \"1d\" or \"2h30m\"");
    if let Some(n) = value.as_integer() {
        return u32::try_from(n).map_err(|_| bad());
    }
    let text = value.as_str().ok_or_else(bad)?;
    if let Ok(n) = text.parse::<u32>() {
        return Ok(n);
    }
    let (mut total, mut digits) = (0u64, String::new());
    for c in text.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let unit = match c {
            'd' => 86_400,
            'h' => 3_600,
            'm' => 60,
            's' => 1,
            _ => return Err(bad()),
        };
        let n: u64 = digits.parse().map_err(|_| bad())?;
        total += n * unit;
        digits.clear();
    }
    if !digits.is_empty() || text.is_empty() {
        return Err(bad());
    }
    u32::try_from(total).map_err(|_| bad())
}

/// The `[[overlay]] name = "dds"` table, checked as slapd checks its directives.
pub(super) fn dds_config(options: &toml::Table) -> Result<Config, String> {
    let mut config = Config::default();
    for (key, value) in options {
        match key.as_str() {
            "state" => {
                config.state = value
                    .as_bool()
                    .ok_or_else(|| format!("{key}: expected true or false"))?
            }
            "max-ttl" => config.max_ttl = seconds(key, value)?,
            "min-ttl" => config.min_ttl = seconds(key, value)?,
            "default-ttl" => config.default_ttl = seconds(key, value)?,
            "interval" => config.interval = seconds(key, value)?,
            "tolerance" => config.tolerance = seconds(key, value)?,
            // A string too: cn=config and `canopy migrate` carry slapd's text.
            "max-dynamicObjects" => {
                config.max_dynamic_objects = match value {
                    toml::Value::Integer(n) => u32::try_from(*n).ok(),
                    toml::Value::String(text) => text.trim().parse().ok(),
                    _ => None,
                }
                .ok_or_else(|| format!("{key}: expected a number of entries"))?
            }
            other => {
                return Err(format!(
                    "unknown option {other:?} (dds takes state, max-ttl, min-ttl, default-ttl, \
                     interval, tolerance, max-dynamicObjects)"
                ))
            }
        }
    }
    config.check()?;
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    #[test]
    fn options() {
        let config = dds_config(&table(
            "max-ttl = \"2d\"\nmin-ttl = 2\ndefault-ttl = \"1h30m\"\ninterval = \"1\"\n\
             tolerance = 5\nmax-dynamicObjects = \"4\"\nstate = true",
        ))
        .unwrap();
        assert_eq!(
            config,
            Config {
                state: true,
                max_ttl: 172_800,
                min_ttl: 2,
                default_ttl: 5_400,
                interval: 1,
                tolerance: 5,
                max_dynamic_objects: 4,
            }
        );
        assert_eq!(dds_config(&toml::Table::new()).unwrap(), Config::default());
        for bad in [
            "max-ttl = 3600",
            "max-ttl = \"1x\"",
            "min-ttl = -1",
            "interval = 0",
            "frequency = 1",
            "state = 1",
        ] {
            assert!(dds_config(&table(bad)).is_err(), "{bad}");
        }
    }
}
