/** berth's version, as `berth --version` and `berth serve`'s initialize say it. */
export const VERSION = '0.1.0';
