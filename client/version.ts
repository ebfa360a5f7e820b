/** This package's version, as its package.json says (a test holds the two equal). */
export const CLIENT_VERSION = '0.1.0';
