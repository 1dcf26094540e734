/** `os-apply-config --help`. */
export const USAGE = `usage: os-apply-config [-h] [-t TEMPLATE_ROOT] [-o OUT_DIR] [-m [METADATA_FILE ...]]
                       [--fallback-metadata [FALLBACK_METADATA ...]] [-v] [--print-templates]
                       [-s SUBHASH] [--key KEY] [--type TYPE] [--key-default KEY_DEFAULT]
                       [--boolean-key BOOLEAN_KEY] [--version] [--os-config-files OS_CONFIG_FILES]
                       [--log-format {json,text}]

Renders the templates under TEMPLATE_ROOT with the merged JSON metadata (hearth's os-apply-config,
also installed as os-config-applier). Metadata files come from -m, else the colon-separated
OS_CONFIG_FILES, else the JSON list in --os-config-files; the fallback files are always read first.

options:
  -h, --help            show this help message and exit
  -t, --templates TEMPLATE_ROOT
                        template root (default: $OS_CONFIG_APPLIER_TEMPLATES, else
                        /usr/libexec/os-apply-config/templates)
  -o, --output OUT_DIR  root directory for output (default: /)
  -m, --metadata [METADATA_FILE ...]
                        metadata files; overrides OS_CONFIG_FILES (the last -m wins)
  --fallback-metadata [FALLBACK_METADATA ...]
                        files read first, lowest priority (default:
                        /var/cache/heat-cfntools/last_metadata /var/lib/heat-cfntools/cfn-init-data
                        /var/lib/cloud/data/cfn-init-data)
  -v, --validate        render only, write nothing
  --print-templates     print the template root and exit
  -s, --subhash SUBHASH use the dict at this dotted key as the metadata root
  --key KEY             print the value at this dotted key (list items by index: a.0.b) and exit
  --type TYPE           with --key: fail unless the value is of this type
                        (int|default|netaddress|netdevice|dsn|swiftdevices|username|raw; default: default)
  --key-default KEY_DEFAULT
                        with --key: print this if the key is missing (no type check)
  --boolean-key BOOLEAN_KEY
                        exit 0 if the value is true, 1 if false, 255 if not a boolean (ignored with --key)
  --version             print the version and exit
  --os-config-files OS_CONFIG_FILES
                        JSON list of metadata files (default: $OS_CONFIG_FILES_PATH, else
                        /var/lib/os-collect-config/os_config_files.json)
  --log-format {json,text}
                        log lines on stderr as JSON objects (default) or text

Exit status: 0 success, 1 error, 2 usage error; --boolean-key 0/1/255.
`;
