const jestJupyterLab = require('@jupyterlab/testing/lib/jest-config');

const baseConfig = jestJupyterLab(__dirname);

module.exports = {
  ...baseConfig,
  automock: false,
  // Above waitFor's own 10 s deadline (helpers.ts), so a slow render fails with its message.
  testTimeout: 20000,
  collectCoverageFrom: [
    'labextension/src/**/*.{ts,tsx}',
    '!labextension/src/**/*.d.ts'
  ],
  // Reports stay out of the work tree (junit.xml, coverage/ would need ignoring).
  coverageDirectory: '<rootDir>/node_modules/.cache/jest-coverage',
  reporters: ['default'],
  // A virtualenv inside the work tree holds JupyterLab's own package.json files.
  modulePathIgnorePatterns: ['<rootDir>/\\.venv', '<rootDir>/\\.cache'],
  // The copies scripts/lab-matrix.sh tests in .cache/ are run there, with their own packages.
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/\\.cache/'],
  testRegex: 'labextension/src/.*/.*\\.spec\\.tsx?$',
  // The lab's own test helpers (a real notebook panel) ship as ES modules, and so does the
  // HTML parser of the sanitizer JupyterLab 4.7 uses (htmlparser2 12 and its family).
  transformIgnorePatterns: [
    baseConfig.transformIgnorePatterns[0].replace(
      '(?!',
      '(?!@jupyterlab/|htmlparser2|domhandler|domutils|dom-serializer|domelementtype|entities|'
    )
  ]
};
