// The Debian version of a package: package.json's, or an override for a test's upgrade or a CI build number.

/**
 * An npm version as a Debian one: a pre-release must sort before its release (`1.2.0-rc.1` < `1.2.0`), which in
 * Debian is the tilde (`1.2.0~rc.1`); a hyphen would instead start a Debian revision. Build metadata (`+b7`) sorts
 * after, as in Debian. Anything else Debian would misread is refused rather than guessed.
 */
export function debianVersion(version) {
  const text = String(version).trim();
  const m = /^(\d+\.\d+\.\d+)(?:-([0-9A-Za-z.-]+))?(\+[0-9A-Za-z.+]+)?$/.exec(text);
  const deb = m ? `${m[1]}${m[2] ? `~${m[2].replaceAll('-', '.')}` : ''}${m[3] ?? ''}` : text;
  if (!/^[0-9][0-9A-Za-z.+~]*$/.test(deb))
    throw new Error(
      `"${text}" cannot be a Debian version: use digits, letters, ".", "+" and "~" (e.g. 0.2.0, 0.2.0~rc.1, 0.2.0+build.7)`,
    );
  return deb;
}
